"""DFlash: a block-diffusion drafter (Qwen3-4B/8B, Qwen3.5/3.6 and Gemma 4 drafters from z-lab) that proposes a
whole block in one forward pass, ported from llama.cpp's `common_speculative_impl_draft_dflash`
(vendor/llama.cpp/common/speculative.cpp).

Its cache holds the target's layer inputs, fused by its `fc`, at the target's positions (an embeddings-only decode:
the "injection"). A draft is one non-causal decode of [id_last, MASK x n_max] at n..n+n_max; rows 1..n_max give
the block greedily. The block is always n_max long, whatever the hybrid has room for (what a mask row predicts
depends on how many masks it sees), and is cut afterwards, as llama.cpp cuts it to the slot's n_max.

DSpark (deepseek-ai's and NVIDIA's drafters) is DFlash with a Markov head in its graph, which conditions each
position on the token before it, starting from the block's anchor (id_last): its block is anchor-first (n_max
tokens, drafts read from row 0 on, `dflash.sample_from_anchor`), and its optional confidence head, not the draft's
probability, is what p_min cuts at (llama.cpp's draft-dspark). DFlash2 (a selector lattice) is refused at load
(runtime/heads.py) until a file of its kind can be tested here.
"""

from __future__ import annotations

from typing import Sequence

from localspec.speculative.heads.base import Choose, HeadDrafter


class DFlashDrafter(HeadDrafter):
    @property
    def dspark(self) -> bool:
        return self.head.info.kind == "dspark"

    @property
    def anchored(self) -> bool:
        """DSpark with anchor-first blocks: row 0 (the anchor) already drafts."""
        return self.dspark and self.head.info.sample_from_anchor

    @property
    def block(self) -> int:
        """Drafted tokens per block: n_max, at most the trained block (less the anchor, unless it drafts too)."""
        trained = self.head.info.block_size - (0 if self.anchored else 1)
        return max(1, min(self.max_len, trained, self.head.ctx.n_batch - 1))

    def _feed(self, start: int, end: int, history: Sequence[int]) -> None:
        ctx, tap = self.head.ctx, self.head.tap
        for a in range(start, end, ctx.n_batch):
            b = min(a + ctx.n_batch, end)
            ctx.run(None, tap.rows(a, b), a)

    def _draft(self, n: int, seq: list[int], limit: int, choose: Choose) -> None:
        ctx, info = self.head.ctx, self.head.info
        k = self.block
        size = k if self.anchored else k + 1
        if len(seq) > k or (self.dspark and len(seq) > 1):
            return  # tokens drafted before fill the block (DSpark's Markov head starts from the anchor alone)
        # Tokens drafted before the head was asked are known: they stand in the block in place of masks. Every row
        # asks for logits, as llama.cpp's block does (DSpark's Markov head reads them all).
        ctx.run(seq + [info.mask_token] * (size - len(seq)), None, n, True)
        conf = ctx.nextn_all(size)[:, 0] if self.dspark and self.p_min > 0 else None
        for i in range(len(seq) - (1 if self.anchored else 0), size):
            if conf is not None and conf[i] < self.p_min:
                return  # DSpark's confidence head: where its drafts stop being likely
            if choose(ctx.logits(i), conf is None) is None:
                return
