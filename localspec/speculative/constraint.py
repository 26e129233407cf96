"""What the engine needs from a grammar (the llguidance tool-call constraint implements it)."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Constraint(Protocol):
    def allowed(self) -> np.ndarray:
        """Boolean mask over the vocabulary: tokens the grammar accepts next."""

    def closing_allowed(self) -> np.ndarray:
        """The allowed tokens that bring the output closest to its end (end a string; end the generation or
        close an array or object; else a comma), all allowed ones if none does: picks near max_tokens with
        GenParams.wrap_up."""

    def is_allowed(self, token: int) -> bool:
        """Whether the grammar accepts `token` next (cheaper than a whole mask)."""

    def consume(self, token: int) -> bool:
        """Advance with an accepted token; False if the grammar refuses it (state unchanged)."""

    def rollback(self, n: int) -> None:
        """Undo the last `n` consumed tokens (rejected drafts)."""

    def forced(self) -> list[int]:
        """Tokens the grammar forces from here, whatever the model prefers (may be empty)."""

    def done(self) -> bool:
        """True once the grammar is complete and generation must stop."""
