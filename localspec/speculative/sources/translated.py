"""A draft model of another family (another tokenizer): it drafts text, which the target's vocabulary tokenizes.

llama.cpp refuses such a draft (common_speculative_are_compatible) and dropped its re-tokenizing path; Hugging
Face's universal assisted generation and vLLM's token-level intersection draft across vocabularies through text,
and so does this source. The draft model reads the target's context in its own tokens (translation.DraftContext,
kept in step incrementally, so its KV cache is reused as the same-family draft's is), drafts greedily while its
top probability stays above p_min, and its text comes back as the target's tokens (translation.Retokenizer).

Exactness needs nothing new: the target verifies every token as it does any other source's. A translated draft has
no distribution over the target's tokens, so its tokens are deterministic proposals (q None: a point mass on the
proposed token, verify.py), which a draft that depends only on the context is: verification then keeps the
target's own distribution at any temperature.

It takes the draft model's place in the hybrid (asked where no other source has a guess, priced per drafted token:
policy/model_price.py), with the translation's time in its price (ModelCall.translate_s).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

import numpy as np

from localspec.speculative.draft import Draft, DraftRequest
from localspec.speculative.sampling import top_prob
from localspec.speculative.sources.draft_model import ModelCall, ModelDrafter
from localspec.speculative.translation import DraftContext, Retokenizer, Vocabulary

if TYPE_CHECKING:
    from localspec.runtime.context import Context


class TranslatedDrafter(ModelDrafter):
    """The draft model of a pair whose vocabularies differ (LoadedPair.translation)."""

    translated = True

    def __init__(self, ctx: Context, target: Vocabulary, *, max_len: int = 8, p_min: float = 0.75,
                 timings: Sequence[tuple[int, int, float]] = ()):
        super().__init__(ctx, max_len=max_len, p_min=p_min, timings=timings)
        self.context = DraftContext(target, ctx.model)
        self.back = Retokenizer(target)

    def behind(self, history: Sequence[int]) -> int:
        """Draft tokens its cache lacks for the target's `history` (translated as propose would: incremental)."""
        return super().behind(self.context.sync(history))

    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        limit = min(req.max_len, self.max_len)
        if limit <= 0:
            return draft
        t0 = time.perf_counter()
        context = self.context.sync(req.history)
        ctx, model = self.ctx, self.ctx.model
        # One draft token more than the target may keep: the last target token is dropped (more text might merge
        # into it), and a draft token is often shorter than the target's.
        steps = limit + 1
        if self.context.pending or not context or len(context) + steps + 1 >= ctx.n_ctx:
            # The context ends inside a character (its bytes are not text yet), or no room is left.
            self.last_call = ModelCall(translate_s=time.perf_counter() - t0)
            return draft
        t1 = time.perf_counter()
        fed = ctx.prefill(context)
        t2 = time.perf_counter()
        out: list[int] = []
        decodes, ended = 0, False
        for j in range(steps):
            logits = ctx.logits(-1)
            tok = int(np.argmax(logits))
            if model.is_eog(tok):
                ended = True
                break
            if self.p_min > 0 and top_prob(logits, tok) < self.p_min:
                break
            out.append(tok)
            if j + 1 < steps:
                ctx.decode([tok])
                decodes += 1
        t3 = time.perf_counter()
        text = b"".join(model.token_bytes(t) for t in out)
        tokens = self.back.tokens(req.history, text, ended=ended)[:limit]
        if req.constraint is not None:
            tokens = tokens[: req.constraint.valid_prefix(tokens)]
        for tok in tokens:
            draft.add(tok, self.name)
        self.last_call = ModelCall(fed, t2 - t1, decodes, t3 - t2, len(draft),
                                   translate_s=(t1 - t0) + (time.perf_counter() - t3))
        return draft

    def reset(self) -> None:
        super().reset()
        self.context.reset()
