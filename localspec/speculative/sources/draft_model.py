"""The draft model: a small LLM with the target's vocabulary proposes tokens from its own KV cache.

It prices itself by its own decodes (`costs`, a CostModel of the draft context, fed by Context.on_decode): one
drafted token costs a single-token step, and tokens it missed while sitting out cost a batch (a catch-up), each
priced by the median of its recent decodes of that shape. Wall time around a call is never a price: it holds a
prefix state read from disk (2.9 s once, priced as one token under load, issue 34) and catch-ups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from localspec.speculative.costs import CostModel
from localspec.speculative.draft import Draft, Drafter, DraftRequest
from localspec.speculative.sampling import constrained_argmax, filtered_dist, top_prob

if TYPE_CHECKING:  # the policy (policy/model_price.py) reads ModelCall without loading llama.cpp
    from localspec.runtime.context import Context

STEADY_FEED = 2  # tokens a call may feed before drafting and still be a steady-state step (the target's pending one)


@dataclass
class ModelCall:
    """How one draft-model call went: tokens fed before drafting and the seconds their decodes took, then the
    single-token steps it made (decodes) and their seconds, the tokens it drafted, and the seconds a draft of another
    vocabulary spent translating between the two (sources/translated.py)."""

    fed: int = 0
    feed_s: float = 0.0
    decodes: int = 0
    steps_s: float = 0.0
    drafted: int = 0
    translate_s: float = 0.0

    @property
    def steady_s(self) -> float:
        """What the call cost beyond catching up: its steps, and its feeding when that was a steady-state feed
        (a catch-up is priced apart, when it is decided: policy/model_price.py)."""
        return self.steps_s + self.translate_s + (self.feed_s if self.fed <= STEADY_FEED else 0.0)


class ModelDrafter(Drafter):
    name = "model"

    def __init__(self, ctx: Context, *, max_len: int = 8, p_min: float = 0.75,
                 timings: Sequence[tuple[int, int, float]] = ()):
        self.ctx = ctx
        self.max_len = max_len
        self.p_min = p_min
        self.last_call = ModelCall()  # how the latest propose() went: what the hybrid accounts the model by
        # What its decodes cost on this machine, by shape, starting from the steps and the batch timed at load.
        self.costs = CostModel()
        for shape in timings:
            self.costs.observe(*shape)
        self._decoded = 0.0  # seconds of decodes since the mark (see _observed)
        ctx.on_decode = self._observed

    def _observed(self, n_tokens: int, n_rows: int, seconds: float) -> None:
        self.costs.observe(n_tokens, n_rows, seconds)
        self._decoded += seconds

    def behind(self, history: Sequence[int]) -> int:
        """Tokens of `history` its cache lacks: what asking it now would feed first."""
        return len(history) - min(self.ctx.common_prefix(history), max(len(history) - 1, 0))

    def probe(self) -> None:
        """Time one single-token step where its cache ends, then roll it back: its price taken anew while it sits
        out (the step replaces the single steps known so far), at the cost of one step instead of a catch-up of
        everything it missed."""
        ctx = self.ctx
        if ctx.n_past + 1 >= ctx.n_ctx:
            return
        base = ctx.n_past
        tok = ctx.tokens[-1] if base else (ctx.model.bos if ctx.model.bos >= 0 else 0)
        ctx.decode([tok])
        ctx.truncate(base)
        self.costs.keep_latest(1, 1)

    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        limit = min(req.max_len, self.max_len)
        if limit <= 0:
            return draft
        ctx = self.ctx
        if ctx.n_past + limit + 1 >= ctx.n_ctx:
            return draft  # no room left: the target alone finishes the generation
        # Only the tokens that differ from the cache are evaluated: the draft reuses its KV cache across steps.
        self._decoded = 0.0
        fed = ctx.prefill(req.history)
        feed_s, self._decoded = self._decoded, 0.0
        decodes = 0
        constraint = req.constraint
        greedy = req.sampling.greedy
        consumed = 0
        try:
            for j in range(limit):
                logits = ctx.logits(-1)
                if greedy:
                    tok = constrained_argmax(logits, constraint)
                    if self.p_min > 0 and top_prob(logits, tok) < self.p_min:
                        break
                    q = None
                else:
                    q = filtered_dist(logits, req.sampling, constraint.allowed() if constraint is not None else None)
                    if self.p_min > 0 and q.probs[0] < self.p_min:
                        break
                    assert req.rng is not None  # a sampled request carries its generator
                    tok = q.sample(req.rng)
                if constraint is not None:
                    if not constraint.consume(tok):
                        break
                    consumed += 1
                draft.add(tok, self.name, q=q)
                if j + 1 < limit:
                    ctx.decode([tok])
                    decodes += 1
        finally:
            if constraint is not None and consumed:
                constraint.rollback(consumed)
            self.last_call = ModelCall(fed, feed_s, decodes, self._decoded, len(draft))
        return draft

    def observe(self, draft: Draft, n_accepted: int) -> None:
        pass  # rejected tokens are dropped lazily by the next prefill's common-prefix check

    def reset(self) -> None:
        self.ctx.clear()
