"""The draft model: a small LLM with the target's vocabulary proposes tokens from its own KV cache."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from localspec.speculative.draft import Draft, Drafter, DraftRequest
from localspec.speculative.sampling import constrained_argmax, filtered_dist, top_prob

if TYPE_CHECKING:  # the policy (policy/model_price.py) reads ModelCall without loading llama.cpp
    from localspec.runtime.context import Context


@dataclass
class ModelCall:
    """How one draft-model call went: tokens fed before drafting and the seconds that took, then the single-token
    steps it made (decodes) and their seconds, the tokens it drafted, and the seconds a draft of another vocabulary
    spent translating between the two (sources/translated.py)."""

    fed: int = 0
    feed_s: float = 0.0
    decodes: int = 0
    steps_s: float = 0.0
    drafted: int = 0
    translate_s: float = 0.0


class ModelDrafter(Drafter):
    name = "model"

    def __init__(self, ctx: Context, *, max_len: int = 8, p_min: float = 0.75):
        self.ctx = ctx
        self.max_len = max_len
        self.p_min = p_min
        self.last_call = ModelCall()  # how the latest propose() went: what the hybrid prices the model by

    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        limit = min(req.max_len, self.max_len)
        if limit <= 0:
            return draft
        ctx = self.ctx
        if ctx.n_past + limit + 1 >= ctx.n_ctx:
            return draft  # no room left: the target alone finishes the generation
        # Only the tokens that differ from the cache are evaluated: the draft reuses its KV cache across steps.
        t0 = time.perf_counter()
        fed = ctx.prefill(req.history)
        t1 = time.perf_counter()
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
            self.last_call = ModelCall(fed, t1 - t0, decodes, time.perf_counter() - t1, len(draft))
        return draft

    def observe(self, draft: Draft, n_accepted: int) -> None:
        pass  # rejected tokens are dropped lazily by the next prefill's common-prefix check

    def reset(self) -> None:
        self.ctx.clear()
