"""EAGLE-3: a one-layer head on three of the target's layer inputs (Llama 3.1/3.3, Qwen3, gpt-oss, Gemma 4 heads),
ported from llama.cpp's `common_speculative_impl_draft_eagle3` (vendor/llama.cpp/common/speculative.cpp).

Its encoder (`fc`) maps each target position's three layer inputs, concatenated, to g; the decoder runs at position
P on the pair (token_{P+1}, g_P), so the pair at the target's last position n-1 waits for the target's next token
(id_last): it is the first decode of every draft, and its pre-norm output is the g the next step pairs with.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from localspec.speculative.heads.base import Choose, HeadDrafter


class Eagle3Drafter(HeadDrafter):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._g: np.ndarray | None = None  # g of the target's last position, from the latest feed
        self._g_pos = -1

    def _on_rollback(self, low: int) -> int:
        return low - 1  # the pair at P reads token P+1, which the rollback took away

    def _encode(self, a: int, b: int) -> np.ndarray:
        """g for positions [a, b): the head's encoder on the tap's rows, in chunks of its batch."""
        ctx, tap = self.head.ctx, self.head.tap
        out = np.empty((b - a, ctx.n_embd), np.float32)
        for c in range(a, b, ctx.n_batch):
            d = min(c + ctx.n_batch, b)
            # The per-token encoder reads no positions: llama.cpp numbers them on from the cache's last.
            ctx.run(None, tap.rows(c, d), ctx.pos_max() + 1, True, encode=True)
            out[c - a:d - a] = ctx.nextn_all(d - c)
        return out

    def _feed(self, start: int, end: int, history: Sequence[int]) -> None:
        # Positions start..end-2 get their pairs now; end-1 is the draft's first decode.
        ctx = self.head.ctx
        g = self._encode(start, end)
        self._g, self._g_pos = g[-1].copy(), end - 1
        for a in range(start, end - 1, ctx.n_batch):
            b = min(a + ctx.n_batch, end - 1)
            ctx.run(list(history[a + 1:b + 1]), g[a - start:b - start], a)

    def sync(self, n: int, history: Sequence[int]) -> int:
        fed = super().sync(n, history)
        if not fed:  # nothing new since the last draft: the boundary pair is decoded again, from its g
            self.valid = min(self.valid, n - 1)
            self.head.ctx.remove_from(n - 1)
            if self._g_pos != n - 1:
                self._g, self._g_pos = self._encode(n - 1, n)[0], n - 1
        return fed

    def _draft(self, n: int, seq: list[int], limit: int, choose: Choose) -> None:
        ctx = self.head.ctx
        assert self._g is not None
        g, pos = self._g[None, :], n - 1
        for tok in seq[:-1]:  # tokens already drafted: read, to carry the head's state past them
            ctx.run([tok], g, pos, True)
            g, pos = ctx.nextn(0)[None, :], pos + 1
        tok = seq[-1]
        for _ in range(limit):
            ctx.run([tok], g, pos, True)
            nxt = choose(ctx.logits(0))
            if nxt is None:
                return
            g, tok, pos = ctx.nextn(0)[None, :], nxt, pos + 1
