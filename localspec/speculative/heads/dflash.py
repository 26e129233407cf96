"""DFlash: a block-diffusion drafter (Qwen3-4B/8B, Qwen3.5/3.6 and Gemma 4 drafters from z-lab) that proposes a
whole block in one forward pass, ported from llama.cpp's `common_speculative_impl_draft_dflash`
(vendor/llama.cpp/common/speculative.cpp).

Its cache holds the target's layer inputs, fused by its `fc`, at the target's positions (an embeddings-only decode:
the "injection"). A draft is one non-causal decode of [id_last, MASK x n_max] at n..n+n_max; rows 1..n_max give
the block greedily. The block is always n_max long, whatever the hybrid has room for (what a mask row predicts
depends on how many masks it sees), and is cut afterwards, as llama.cpp cuts it to the slot's n_max.

DSpark (a Markov head on top, anchor-first blocks) and DFlash2 (a selector lattice) are refused at load
(runtime/heads.py) until a file of theirs can be tested here.
"""

from __future__ import annotations

from typing import Sequence

from localspec.speculative.heads.base import Choose, HeadDrafter


class DFlashDrafter(HeadDrafter):
    @property
    def block(self) -> int:
        """Drafted tokens per block: n_max, at most the trained block size less the anchor."""
        return max(1, min(self.max_len, self.head.info.block_size - 1, self.head.ctx.n_batch - 1))

    def _feed(self, start: int, end: int, history: Sequence[int]) -> None:
        ctx, tap = self.head.ctx, self.head.tap
        for a in range(start, end, ctx.n_batch):
            b = min(a + ctx.n_batch, end)
            ctx.run(None, tap.rows(a, b), a)

    def _draft(self, n: int, seq: list[int], limit: int, choose: Choose) -> None:
        ctx, info = self.head.ctx, self.head.info
        k = self.block
        if len(seq) > k:
            return  # tokens drafted before fill the block
        # Tokens drafted before the head was asked are known: they stand in the block in place of masks.
        block = seq + [info.mask_token] * (k + 1 - len(seq))
        ctx.run(block, None, n, [False] * (len(seq) - 1) + [True] * (k + 2 - len(seq)))
        for i in range(len(seq), k + 1):
            if choose(ctx.logits(i)) is None:
                return
