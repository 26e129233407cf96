"""MTP: the NextN block(s) a model ships with (Qwen3.5/3.6, GLM-4.5+, DeepSeek-V3.2/V4, MiMo-V2, Step-3.5),
ported from llama.cpp's `common_speculative_impl_draft_mtp` (vendor/llama.cpp/common/speculative.cpp).

The head's input at position p is the pair (token_p, h_{p-1}): the target's last hidden state before p (its
`h_nextn`, post-norm). Drafting starts from (id_last, h_{n-1}) at n and chains (d_i, the head's own h) at n+i.

Chained heads (n_layer_nextn > 1, Step-3.5 and MiMo-V2): each draft step runs a different trained block, selected
with llama_set_nextn_layer_offset; each block has its own KV layer but shares the cells, so a step rebuilds the
draft region under its block (llama.cpp's comments, PR 24340). The draft is then at most one token per block.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from localspec.speculative.heads.base import Choose, HeadDrafter
from localspec.runtime.staging import fn


class MTPDrafter(HeadDrafter):
    @property
    def chained(self) -> bool:
        return self.head.info.n_heads > 1

    def _offset(self, k: int) -> None:
        fn("llama_set_nextn_layer_offset")(self.head.ctx.ptr, k)

    def _feed(self, start: int, end: int, history: Sequence[int]) -> None:
        ctx = self.head.ctx
        for a in range(start, end, ctx.n_batch):
            b = min(a + ctx.n_batch, end)
            toks, rows = list(history[a:b]), self._rows_before(a, b)
            if not self.chained:
                ctx.run(toks, rows, a)
                continue
            try:
                for k in range(self.head.info.n_heads):  # every block's layer gets these positions
                    ctx.remove_from(a)
                    self._offset(k)
                    ctx.run(toks, rows, a)
            finally:
                self._offset(0)

    def _draft(self, n: int, seq: list[int], limit: int, choose: Choose) -> None:
        ctx = self.head.ctx
        h = self._row(n - 1)
        if self.chained:
            if len(seq) == 1:  # each block drafts one position: nothing left for tokens drafted before
                self._draft_chained(n, seq[0], min(limit, self.head.info.n_heads), h, choose)
            return
        pos = n
        for tok in seq[:-1]:  # tokens already drafted: read, to carry the head's state past them
            ctx.run([tok], h[None, :], pos, True)
            h, pos = ctx.nextn(0), pos + 1
        tok = seq[-1]
        for _ in range(limit):
            ctx.run([tok], h[None, :], pos, True)
            nxt = choose(ctx.logits(0))
            if nxt is None:
                return
            h, tok, pos = ctx.nextn(0), nxt, pos + 1

    def _draft_chained(self, n: int, id_last: int, limit: int, h: np.ndarray, choose: Choose) -> None:
        ctx = self.head.ctx
        toks, hs = [id_last], [h]
        try:
            for i in range(limit):
                ctx.remove_from(n)
                self._offset(i)
                ctx.run(toks, np.stack(hs), n, [False] * (len(toks) - 1) + [True])
                last = len(toks) - 1
                nxt = choose(ctx.logits(last))
                if nxt is None:
                    return
                hs.append(ctx.nextn(last))
                toks.append(nxt)
        finally:
            self._offset(0)
