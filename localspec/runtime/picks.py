"""Each logits row's few best tokens, picked by llama.cpp where the output layer runs (its backend sampling API).

Why: a greedy target needs only the top of each row, yet reading whole rows means copying n_vocab floats per row to
the host (152k for Qwen2's vocabulary, 262k for Gemma's) and scanning them there. With a top-k sampler chain
attached to the sequence, llama.cpp runs top-k in the same graph as the forward pass, copies back k ids and their
logits per row (llama_get_sampled_candidates_ith / llama_get_sampled_logits_ith), and no raw rows at all
(llama-context.cpp: needs_raw_logits is false when every output row's sequence has a backend sampler).
"""

from __future__ import annotations

from operator import neg

from localspec.errors import LocalspecError
from localspec.runtime.llama import lib


class TopK:
    """A top-k sampler chain attached to one sequence of a context, until detach().

    llama.cpp prepares a chain for the backend once (llama_sampler_chain_backend_init asserts it), so every attachment
    is a new chain; the context keeps a pointer to it, so it is freed only once detached."""

    def __init__(self, ctx_ptr, k: int, seq: int = 0):
        self.ctx_ptr, self.k, self.seq = ctx_ptr, k, seq
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_k(k))  # the chain owns it from here
        if not lib.llama_set_sampler(ctx_ptr, seq, chain):
            lib.llama_sampler_free(chain)
            raise LocalspecError("llama.cpp could not run top-k sampling on this model's output device")
        self.chain = chain

    def detach(self) -> None:
        if self.chain is not None:
            lib.llama_set_sampler(self.ctx_ptr, self.seq, None)
            lib.llama_sampler_free(self.chain)
            self.chain = None

    def row(self, i: int) -> tuple[list[int], list[float]] | None:
        """Batch row i's candidates and their logits, highest logit first and equal logits by token id (the order
        numpy's argmax breaks ties in); None if llama.cpp sampled nothing there. llama.cpp's top-k leaves them
        unordered."""
        n = lib.llama_get_sampled_candidates_count_ith(self.ctx_ptr, i)
        if n == 0 or lib.llama_get_sampled_logits_count_ith(self.ctx_ptr, i) != n:
            return None
        ids = lib.llama_get_sampled_candidates_ith(self.ctx_ptr, i)[:n]
        logits = lib.llama_get_sampled_logits_ith(self.ctx_ptr, i)[:n]
        pairs = sorted(zip(map(neg, logits), ids))  # (-logit, id): highest first, then the lowest id
        return [t for _, t in pairs], [-x for x, _ in pairs]
