"""The one small interface every drafter implements, and what a draft carries."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from localspec.speculative.constraint import Constraint
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
    constraint: Constraint | None = None  # the grammar, while a tool call (or a JSON response) is generated
    rng: np.random.Generator | None = None
    # Tokens the generation may still produce (max_tokens less those generated; None: unknown): what a draft model
    # that must first catch up on tokens it missed can still win back (policy/model_price.py).
    remaining: int | None = None


class Drafter(ABC):
    """What the engine drives: propose a draft, hear how much of it was accepted."""

    name: str = "drafter"  # the origin its tokens report (speculative/names.py lists them all)

    @abstractmethod
    def propose(self, req: DraftRequest) -> Draft:
        """A draft of at most req.max_len tokens after req.history. A drafter that consumes tokens on
        req.constraint must roll them back before returning: the engine owns the grammar's state."""

    def observe(self, draft: Draft, n_accepted: int) -> None:
        """Feedback after verification (acceptance statistics, adaptive lengths, learned n-grams)."""

    def reset(self) -> None:
        """Forget what was learned (a new conversation)."""

    def remember_call(self, tokens: Sequence[int], text: str, tool: str | None = None) -> None:
        """A finished tool call, for drafters that learn from earlier calls (the history drafter)."""

    def finish(self, tokens: Sequence[int], prompt_len: int) -> None:
        """A generation ended: `tokens` is its prompt (the first `prompt_len`) and what it generated, for drafters
        that remember generations (a repeated or regenerated request drafts from them)."""


@dataclass(frozen=True)
class Candidate:
    """What a candidate source found: its tokens, the length of the match that found them (0: none, a guess from
    elsewhere), the token positions where a copy may plausibly stop (a line start: where an edit's `old` ends),
    priced with an acceptance of their own, and the key its acceptance is tracked under (the source's own key, or a
    refinement such as "copy:old": which JSON value the copy goes into, each kind learning its own rates)."""

    tokens: list[int]
    match: int
    key: str
    breaks: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.tokens)


class CandidateDrafter(Drafter):
    """A source the hybrid drafter asks directly: `candidate(context, max_len, constraint)` returns a Candidate (or
    None: nothing found). propose() makes it a Drafter of its own too.

    The class attributes below are what the hybrid policy knows about a source, fixed for its kind; each subclass
    sets those that differ from the defaults. What one lookup found travels in its Candidate."""

    name = "candidate"
    # Acceptance is tracked per `key` (default: `name`): sources reported under one name ("ngram": token and text
    # prompt lookup, request spans) are right at different rates, so each keeps its own.
    key: str | None = None
    # Its candidates are whole values (a span of the request): once one is drafted in full, the hybrid guesses how
    # the value ends ('",' '"}') in the same draft.
    whole_value = False
    # It only picks between alternatives the grammar allows (which tool): where its candidate and another source's
    # disagree, it wins on the odds of its pick alone, not on how far each runs (HybridDrafter._best_candidate).
    picks = False
    min_match = 0  # shorter matches propose nothing when used alone
    # It only has something to say inside a tool call (values copied into JSON, which tool): in prose the hybrid
    # does not ask it, so its lookups cost nothing there.
    grammar_only = False
    # It drafts from what earlier generations wrote: seeded sampling must replay exactly whatever ran before it, so
    # the hybrid does not ask it then.
    remembers = False

    @property
    def rate_key(self) -> str:
        """The key its acceptance is tracked under (and its lookups accounted: policy/gate.py)."""
        return self.key or self.name

    def found(self, tokens: Sequence[int], match: int, *, breaks: tuple[int, ...] = (),
              suffix: str = "") -> Candidate | None:
        """The Candidate for `tokens` (None when there are none), tracked under rate_key + `suffix`."""
        return Candidate(list(tokens), match, self.rate_key + suffix, breaks) if tokens else None

    @abstractmethod
    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        """Up to `max_len` tokens that may follow `context` (None if nothing was found). The tokens need not fit
        `constraint`: the hybrid keeps only the prefix it accepts."""

    def bucket(self, m: int) -> int:
        """Which acceptance bucket a candidate's first token falls in, from its match length: 0 (a sure match)
        or 1 (a weak one: the hybrid tracks the two apart)."""
        return 0 if m else 1

    def add_call_tokens(self, tokens: Sequence[int], text: str, tool: str | None = None) -> None:
        """A finished tool call exactly as the model wrote it, passed on by the hybrid's remember_call (only sources
        that learn from calls keep it)."""

    def finish(self, tokens: Sequence[int], prompt_len: int) -> None:
        """A finished generation, passed on by the hybrid (only sources that remember generations keep it)."""

    def propose(self, req: DraftRequest) -> Draft:
        found = self.candidate(req.history, req.max_len, req.constraint)
        draft = Draft()
        if found is not None and found.match >= self.min_match:
            for t in found.tokens:
                draft.add(t, self.name)
        return draft
