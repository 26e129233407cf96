"""The one small interface every drafter implements, and what a draft carries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from localspec.speculative.sampling import Dist, SamplingParams


@dataclass
class Draft:
    """Proposed continuation. `origins[i]` names the drafter of tokens[i]; `forced[i]` marks tokens the grammar
    forces (the target needs no logits to check them); `q[i]` is the proposal distribution (None = deterministic)."""

    tokens: list[int] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    forced: list[bool] = field(default_factory=list)
    q: list[Dist | None] = field(default_factory=list)
    # The token the grammar forces right after the whole draft, when a drafter knows it: the verify pass then
    # needs no logits for its last row (the target has no choice there).
    next_forced: int | None = None

    def __len__(self) -> int:
        return len(self.tokens)

    def truncate(self, n: int) -> None:
        """Keep the first n tokens (next_forced then no longer applies unless nothing was cut)."""
        if n < len(self.tokens):
            del self.tokens[n:], self.origins[n:], self.forced[n:], self.q[n:]
            self.next_forced = None

    def add(self, token: int, origin: str, forced: bool = False, q: Dist | None = None) -> None:
        self.tokens.append(token)
        self.origins.append(origin)
        self.forced.append(forced)
        self.q.append(q)


@dataclass
class DraftRequest:
    history: Sequence[int]  # every token so far; the last one is not yet in the target's cache
    max_len: int
    sampling: SamplingParams
    constraint: object | None = None  # a Constraint (localspec.speculative.constraint) while a tool call is generated
    rng: object | None = None


class Drafter(Protocol):
    name: str

    def propose(self, req: DraftRequest) -> Draft: ...

    def observe(self, draft: Draft, n_accepted: int) -> None:
        """Feedback after verification (acceptance statistics, adaptive lengths, learned n-grams)."""

    def reset(self) -> None: ...


class CandidateDrafter:
    """A source the hybrid drafter asks directly: `candidate(context, max_len) -> (tokens, match length)`.
    propose() makes it a Drafter of its own too."""

    name = "candidate"
    min_match = 0  # shorter matches propose nothing when used alone
    needs_grammar = False  # candidate() takes the constraint as a third argument

    def candidate(self, context: Sequence[int], max_len: int, *args) -> tuple[list[int], int]:
        raise NotImplementedError

    def bucket(self, m: int) -> int:
        """Which acceptance bucket a candidate's first token falls in, from its match length: 0 (a sure match)
        or 1 (a weak one: the hybrid tracks the two apart)."""
        return 0 if m else 1

    def propose(self, req: DraftRequest) -> Draft:
        extra = (req.constraint,) if self.needs_grammar else ()
        toks, m = self.candidate(req.history, req.max_len, *extra)
        draft = Draft()
        if m >= self.min_match:
            for t in toks:
                draft.add(t, self.name)
        return draft

    def observe(self, draft: Draft, n_accepted: int) -> None:
        pass
