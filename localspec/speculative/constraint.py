"""What the engine and the drafters need from a grammar: the one interface they use (llguidance's tool-call and
JSON grammars implement it in speculative/grammar.py).

Modelled on vLLM's StructuredOutputGrammar (validate_tokens, accept_tokens, rollback, find_jump_string,
is_terminated): a drafter may only ask the grammar through these methods, so any grammar engine that answers them
can drive speculative decoding, and tests can drive the drafting policy with a small fake.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np


class Constraint(ABC):
    """A grammar's state while a generation runs under it. Every consuming method leaves the state unchanged when it
    refuses a token; rollback undoes accepted ones (drafts that verification rejected)."""

    # The tools a tool-call grammar allows (OpenAI-style dicts), for drafters that guess which one is called;
    # None where the grammar is not about tools or they are not known.
    tools: list[dict] | None = None

    # -- what the target may pick next ---------------------------------------------------------------------------
    @abstractmethod
    def allowed(self) -> np.ndarray:
        """Boolean mask over the vocabulary: tokens the grammar accepts next."""

    @abstractmethod
    def closing_allowed(self) -> np.ndarray:
        """The allowed tokens that bring the output closest to its end (end a string; end the generation or close an
        array or object; else a comma), all allowed ones if none does: picks near max_tokens with GenParams.wrap_up."""

    @abstractmethod
    def is_allowed(self, token: int) -> bool:
        """Whether the grammar accepts `token` next (cheaper than a whole mask)."""

    @abstractmethod
    def valid_prefix(self, tokens: Sequence[int]) -> int:
        """How many leading tokens of `tokens` the grammar would accept in a row, without consuming them
        (vLLM's validate_tokens): how much of a drafter's candidate can stand."""

    # -- advancing and undoing -----------------------------------------------------------------------------------
    @abstractmethod
    def consume(self, token: int) -> bool:
        """Advance with an accepted token; False if the grammar refuses it (state unchanged)."""

    @abstractmethod
    def consume_valid_prefix(self, tokens: Sequence[int]) -> int:
        """Consume the longest prefix of `tokens` the grammar accepts; returns its length."""

    @abstractmethod
    def rollback(self, n: int) -> None:
        """Undo the last `n` consumed tokens (rejected drafts)."""

    # -- what the grammar decides by itself ----------------------------------------------------------------------
    @abstractmethod
    def forced(self) -> list[int]:
        """Tokens the grammar forces from here, whatever the model prefers (may be empty)."""

    @abstractmethod
    def forced_bytes(self) -> bytes:
        """Text the grammar forces from here (vLLM's find_jump_string). Longer than forced() where that text can be
        split into tokens in more than one way (' "' after a comma, the rest of an enum value)."""

    @abstractmethod
    def in_string(self) -> bool:
        """Whether the output so far ends inside a JSON string literal (where ',' or '}' would be content, and only a
        quote ends the value)."""

    @abstractmethod
    def done(self) -> bool:
        """True once the grammar is complete and generation must stop (vLLM's is_terminated)."""
