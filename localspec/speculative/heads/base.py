"""What every head driver shares: keeping the head's cache in step with the target, picking drafted tokens as
llama.cpp does, and reporting each call the way the draft model does (ModelCall), so the hybrid prices a head's
step exactly as it prices a draft model's (policy/model_price.py).

The head's cache follows the target's: positions [0, valid) hold what the target's tokens and hidden rows make of
them. When the target rolls back (a rejected draft, a new prompt), `valid` drops with it (Tap.take_low); when the
head is asked to draft, it first catches up on the rows the target decoded since (one batched decode per n_batch),
then drafts after the target's last token, then drops its drafted positions again.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import numpy as np

from localspec.speculative.costs import CostModel
from localspec.speculative.draft import Draft, Drafter, DraftRequest
from localspec.speculative.sampling import constrained_argmax
from localspec.speculative.sources.draft_model import STEADY_FEED, ModelCall

if TYPE_CHECKING:
    from localspec.runtime.heads import LoadedHead

KEEP_BEHIND = 512  # rows kept behind the head's position: a target may roll back a little further than a draft
Choose = Callable[..., Optional[int]]  # (logits, p_min=True) -> the drafted token, or None to stop
MAX_PREFIX = 16  # tokens drafted before the head was asked that it reads one decode each (forced JSON structure)
TOP_K = 10  # llama.cpp's draft sampler: top-k 10, and p is the winner's share of those ten (its --spec-draft-p-min)


def top_k_prob(logits: np.ndarray, token: int, k: int = TOP_K) -> float:
    """The probability llama.cpp's head drafting compares with p_min: softmax over the k best logits, at `token`."""
    top = logits[np.argpartition(logits, -k)[-k:]] if logits.shape[0] > k else logits
    m = float(top.max())
    denom = float(np.exp(top - m).sum())
    return float(np.exp(float(logits[token]) - m)) / denom


class HeadDrafter(Drafter):
    """A drafter over one loaded head. Subclasses say how the head catches up (`_feed`) and drafts (`_draft`)."""

    def __init__(self, head: LoadedHead, *, max_len: int = 3, p_min: float = 0.0):
        self.head = head
        self.name = head.origin
        self.max_len = max_len
        self.p_min = p_min
        self.valid = 0  # head cache positions in step with the target
        self.last_call = ModelCall()  # how the latest propose() went: what the hybrid prices the head by
        self.steps = 0  # drafting decodes, over the head's life (its catch-ups apart)
        self.fed = 0  # target rows it caught up on
        # What its decodes cost on this machine, by shape: a drafted token's step (a DFlash block shared among the
        # tokens it drafted) and its catch-ups, as the draft model's own decodes price it (policy/model_price.py).
        self.costs = CostModel()

    def behind(self, history: Sequence[int]) -> int:
        """Target rows its cache lacks: what asking it now would feed first (rows, not `history`'s tokens)."""
        return max(self.head.target.n_past - self.valid, 0)

    # -- what subclasses provide -------------------------------------------------------------------------------
    @abstractmethod
    def _feed(self, start: int, end: int, history: Sequence[int]) -> None:
        """Bring the head's cache from `start` to `end` (end: the target's n_past), from the tap's rows."""

    @abstractmethod
    def _draft(self, n: int, seq: list[int], limit: int, choose: Choose) -> None:
        """Draft up to `limit` tokens after the target's `n` cached tokens and `seq`: the target's pending token
        (id_last), then any tokens already drafted before the head was asked (forced by the grammar), which the head
        reads without choosing. Each drafted position's logits go to `choose`, which returns the drafted token or
        None (stop: under p_min, or the grammar refuses)."""

    def _kept_after_draft(self, n: int) -> int:
        """Positions of the head's cache still in step with the target after a draft at n (default: n)."""
        return n

    def _on_rollback(self, low: int) -> int:
        """Positions still valid after the target rolled back to `low` tokens (default: those below it)."""
        return low

    # -- the shared driver ---------------------------------------------------------------------------------------
    def _row(self, pos: int) -> np.ndarray:
        """The target row at `pos`, or zeros where none is kept (the start of a run: llama.cpp pairs the first
        token it sees with a zero row too)."""
        tap = self.head.tap
        if tap.lo <= pos < tap.hi:
            return tap.rows(pos, pos + 1)[0]
        return np.zeros(tap.width, np.float32)

    def _rows_before(self, a: int, b: int) -> np.ndarray:
        """Rows of positions [a-1, b-1): the row before each of a..b-1 (zeros where not kept)."""
        tap = self.head.tap
        out = np.zeros((b - a, tap.width), np.float32)
        lo = max(a - 1, tap.lo)
        if lo < b - 1:
            out[lo - (a - 1):] = tap.rows(lo, b - 1)
        return out

    def sync(self, n: int, history: Sequence[int]) -> int:
        """Catch the head up to the target's n cached tokens; returns how many target rows it fed."""
        tap = self.head.tap
        low = tap.take_low()
        valid = self.valid if low is None else min(self.valid, self._on_rollback(low))
        if valid < tap.lo:
            # Rows it would need are gone (a restored state, or it sat out past the tap's memory): start a new run
            # where the rows begin.
            self.head.ctx.clear()
            valid = tap.lo
        else:
            self.head.ctx.remove_from(valid)
        fed = max(n - valid, 0)
        if fed:
            self._feed(valid, n, history)
        self.valid = max(valid, n) if fed else valid
        tap.forget_before(n - KEEP_BEHIND)
        self.fed += fed
        return fed

    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        target = self.head.target
        n = target.n_past
        seq = list(req.history[n:])  # the target's pending token, then tokens drafted before the head was asked
        limit = min(req.max_len, self.max_len)
        if limit <= 0 or n <= 0 or not seq or len(seq) > MAX_PREFIX or n + len(seq) + limit + 1 >= target.n_ctx:
            return draft  # nothing to draft from, too far ahead of the target, or no room left
        if target.tokens[-1] != req.history[n - 1] or self.head.tap.hi != n:
            return draft  # not in step with the target
        ctx = self.head.ctx
        t0 = time.perf_counter()
        fed = self.sync(n, req.history)
        t1 = time.perf_counter()
        before = sum(ctx.shapes.values())
        cons = req.constraint
        consumed = 0

        def choose(logits: np.ndarray, p_min: bool = True) -> int | None:
            nonlocal consumed
            if len(draft) >= limit:
                return None
            tok = constrained_argmax(logits, cons)
            if p_min and self.p_min > 0 and top_k_prob(logits, tok) < self.p_min:
                return None  # llama.cpp's p_min: only confident tokens
            if cons is not None:
                if not cons.consume(tok):
                    return None
                consumed += 1
            draft.add(tok, self.name)
            return tok

        try:
            self._draft(n, seq, limit, choose)
        finally:
            if cons is not None and consumed:
                cons.rollback(consumed)
            kept = self._kept_after_draft(n)
            ctx.remove_from(kept)
            self.valid = min(self.valid, kept)
            decodes = sum(ctx.shapes.values()) - before
            self.steps += decodes
            self.last_call = call = ModelCall(fed, t1 - t0, decodes, time.perf_counter() - t1, len(draft))
            if decodes:
                self.costs.observe(1, 1, call.steps_s / max(call.drafted, decodes))
            if fed > STEADY_FEED:
                self.costs.observe(fed, 1, call.feed_s)
        return draft

    def reset(self) -> None:
        self.head.ctx.clear()
        self.valid = 0
