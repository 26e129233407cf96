"""Which drafted tokens the target keeps, and the target's own token after them: the step that makes speculative
decoding exact.

One verify pass has decoded [last token] + draft; row i of its logits is the target's prediction for the token
after draft[:i]. Rows are judged in order and the first rejection ends the pass:

- Forced rows: the grammar allows only the drafted token, so the constrained target has no choice there. They are
  kept without logits, in both modes (the engine asked llama.cpp for none).
- Greedy (verify_greedy): a drafted token is kept iff it is the target's own greedy pick at its row; at the first
  disagreement the target's pick is the next token. The output is the target's greedy output, token for token.
- Sampled (verify_sampled): speculative sampling (Leviathan et al., Chen et al., 2023). A token x drawn from q is
  kept with probability min(1, p(x) / q(x)); else the next token is drawn from the normalised residual
  max(0, p - q). What comes out is distributed exactly as the target alone would sample it. A deterministic
  proposal (q None) is a point mass on x.

If every drafted token is kept, the last row gives the target's next token for free (or the grammar forces it:
Draft.next_forced, no logits needed). Kept tokens are consumed on the grammar as they are judged, so each row is
judged under the grammar state it really has.

Greedy rows are read the cheapest way the target context offers: where llama.cpp picked each row's few best tokens
on the device (Context.pick_on_device), the target's token is the best one the grammar allows (sampling.top_pick);
only where those cannot tell (none allowed) is the whole row read. Sampled rows always need whole rows: p must be
the target's exact distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Draft
from localspec.speculative.sampling import (
    Dist,
    SamplingParams,
    constrained_argmax,
    filtered_dist,
    masked_argmax,
    residual,
    top_pick,
)

# How many best tokens a greedy row keeps where the device picks them: enough that a grammar almost always allows
# one of them (else the row is computed again whole: Context.logits), few enough to cost nothing to read back.
DEVICE_CANDIDATES = 8


class Rows(Protocol):
    """A pass's rows as the target context gives them (runtime Context), by batch index (-1: the last row)."""

    def logits(self, i: int) -> np.ndarray:
        """The whole row."""

    def top(self, i: int) -> tuple[Sequence[int], Sequence[float]] | None:
        """Its best tokens and their logits, highest first (equal logits by id), where the device picked them; None
        where it did not."""


@dataclass(frozen=True)
class TargetPolicy:
    """How the target picks a token at a row of a pass: its sampling parameters, under the grammar, and in wrap-up
    mode (closing_allowed: the call must end before max_tokens) from row `wrap_from` on."""

    sampling: SamplingParams
    constraint: Constraint | None = None
    wrap_from: int | None = None  # first row picked in wrap-up mode (None: no wrap-up)

    def closing(self, row: int) -> bool:
        return self.wrap_from is not None and row >= self.wrap_from

    def allowed(self, row: int) -> np.ndarray | None:
        """The grammar's mask at this row, narrowed to closing tokens in wrap-up mode (None: no grammar)."""
        cons = self.constraint
        if cons is None:
            return None
        return cons.closing_allowed() if self.closing(row) else cons.allowed()

    def greedy(self, logits: np.ndarray, row: int) -> int:
        if self.closing(row):
            return masked_argmax(logits, self.allowed(row))
        return constrained_argmax(logits, self.constraint)  # checks one token before building a whole mask

    def greedy_at(self, rows: Rows, i: int, row: int | None = None) -> int:
        """The greedy token at batch row i (pass row `row`, default i): from the row's best tokens where the device
        picked them, from the whole row where it did not or they cannot tell."""
        row = i if row is None else row
        top = rows.top(i)
        if top is not None:
            pick = top_pick(top[0], top[1], self._allows(row))
            if pick is not None:
                return pick
        return self.greedy(rows.logits(i), row)

    def _allows(self, row: int) -> Callable[[int], bool] | None:
        cons = self.constraint
        if cons is None:
            return None
        if self.closing(row):
            mask = cons.closing_allowed()
            return lambda tok: bool(mask[tok])
        return cons.is_allowed

    def dist(self, logits: np.ndarray, row: int) -> Dist:
        return filtered_dist(logits, self.sampling, self.allowed(row))

    def pick(self, rows: Rows, rng: np.random.Generator, i: int = -1) -> int:
        """The target's own token at batch row i, pass row 0 (the first token of a generation, without drafts)."""
        if self.sampling.greedy:
            return self.greedy_at(rows, i, 0)
        return self.dist(rows.logits(i), 0).sample(rng)


@dataclass(frozen=True)
class Verdict:
    accepted: int  # drafted tokens kept, forced ones included
    forced: int  # how many of them the grammar forced
    next_token: int  # the target's own token after them


def verify(draft: Draft, rows: Rows, policy: TargetPolicy, rng: np.random.Generator) -> Verdict:
    if policy.sampling.greedy:
        return verify_greedy(draft, rows, policy)
    return verify_sampled(draft, rows, policy, rng)


def verify_greedy(draft: Draft, rows: Rows, policy: TargetPolicy) -> Verdict:
    cons = policy.constraint
    forced = 0
    for i, tok in enumerate(draft.tokens):
        if draft.forced[i]:
            _keep_forced(cons, tok)
            forced += 1
            continue
        choice = policy.greedy_at(rows, i)
        if choice != tok:
            return Verdict(i, forced, choice)
        if cons is not None:
            cons.consume(tok)  # the target's own pick: the grammar allows it
    n = len(draft)
    nxt = draft.next_forced if draft.next_forced is not None else policy.greedy_at(rows, n)
    return Verdict(n, forced, nxt)


def verify_sampled(draft: Draft, rows: Rows, policy: TargetPolicy, rng: np.random.Generator) -> Verdict:
    cons = policy.constraint
    forced = 0
    for i, tok in enumerate(draft.tokens):
        if draft.forced[i]:
            _keep_forced(cons, tok)
            forced += 1
            continue
        p = policy.dist(rows.logits(i), i)
        q = draft.q[i]
        px = p.prob(tok)
        qx = q.prob(tok) if q is not None else 1.0
        if not (qx > 0 and rng.random() < min(1.0, px / qx)):
            return Verdict(i, forced, residual(p, q, tok).sample(rng))
        if cons is not None:
            cons.consume(tok)  # p(tok) > 0, so the grammar allows it
    n = len(draft)
    nxt = draft.next_forced if draft.next_forced is not None else policy.dist(rows.logits(n), n).sample(rng)
    return Verdict(n, forced, nxt)


def _keep_forced(cons: Constraint | None, tok: int) -> None:
    # Forced means the grammar allows nothing else, so the constrained target must pick it too.
    if cons is None or not cons.consume(tok):
        raise RuntimeError(f"drafter marked token {tok} as forced but the grammar refuses it")
