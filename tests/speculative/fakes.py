"""A scripted grammar for tests that must run without a model: llguidance needs a real vocabulary, so the policy and
verifier tables drive this small Constraint instead (the tests beside them drive the same code with llguidance on
SmolLM2)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from localspec.speculative.constraint import Constraint


class Script(Constraint):
    """A grammar over a toy vocabulary that allows, at step i, exactly the tokens in steps[i]; a step with a single
    token forces it. Complete after the last step."""

    def __init__(self, steps: Sequence[set[int]], n_vocab: int = 128):
        self.steps = [frozenset(s) for s in steps]
        self.n_vocab = n_vocab
        self.pos = 0

    def allowed(self) -> np.ndarray:
        mask = np.zeros(self.n_vocab, dtype=bool)
        if not self.done():
            mask[list(self.steps[self.pos])] = True
        return mask

    def closing_allowed(self) -> np.ndarray:
        return self.allowed()

    def is_allowed(self, token: int) -> bool:
        return not self.done() and token in self.steps[self.pos]

    def valid_prefix(self, tokens: Sequence[int]) -> int:
        n = 0
        while n < len(tokens) and self.pos + n < len(self.steps) and tokens[n] in self.steps[self.pos + n]:
            n += 1
        return n

    def consume(self, token: int) -> bool:
        if not self.is_allowed(token):
            return False
        self.pos += 1
        return True

    def consume_valid_prefix(self, tokens: Sequence[int]) -> int:
        n = self.valid_prefix(tokens)
        self.pos += n
        return n

    def rollback(self, n: int) -> None:
        self.pos -= n

    def forced(self) -> list[int]:
        out = []
        for step in self.steps[self.pos:]:
            if len(step) != 1:
                break
            out.extend(step)
        return out

    def forced_bytes(self) -> bytes:
        return b""

    def in_string(self) -> bool:
        return False

    def done(self) -> bool:
        return self.pos >= len(self.steps)


def as_pair(found) -> tuple[list[int], int]:
    """A source's Candidate as (tokens, match length); ([], 0) when it found nothing."""
    return ([], 0) if found is None else (found.tokens, found.match)
