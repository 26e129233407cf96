"""A real GGUF whose greedy output is a script: the reply of a reasoning model, token for token, from llama.cpp.

Why: reasoning tests need a model that writes `<think>…</think>` and then an answer or a tool call, with a real
chat template and a real tokenizer, and no such model is small enough to ship. This file is one: the vocabulary and
template of a tests/template_gguf.py format, and weights that make the next token a function of the current one.
The layers add nothing (their output projections are zero), so the hidden state is the current token's embedding;
script tokens get orthonormal embeddings, and the output row of each script token is the embedding of the token
before it. Greedy decoding therefore walks the script (each script token may appear once), and a grammar still
masks it as it would a real model.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from tests.template_gguf import FORMATS, _T, _pieces

SCALE = 20.0  # logit of the scripted next token (every other script token: 0)


def _vocab(fmt) -> tuple[list[str], list[int], list[float]]:
    """The token list of template_gguf.write_format_gguf (same ids, same types)."""
    specials = ["<unk>", fmt.bos, fmt.eos] + [t for t in fmt.control if t not in (fmt.bos, fmt.eos)]
    tokens = specials + list(fmt.user_defined) + [f"<0x{b:02X}>" for b in range(256)]
    types = [_T.UNKNOWN] + [_T.CONTROL] * (len(specials) - 1) + [_T.USER_DEFINED] * len(fmt.user_defined) \
        + [_T.BYTE] * 256
    pieces = [p for p in _pieces("a") if p not in tokens]
    scores = [0.0] * len(tokens) + [float(len(p)) for p in pieces]
    return tokens + pieces, [int(t) for t in types] + [int(_T.NORMAL)] * len(pieces), scores


def write_scripted_gguf(path, format_name: str, script: list[str], *, start: str = "<0x0A>") -> Path:
    """A GGUF in `format_name`'s vocabulary and template that, after a prompt ending in token `start`, greedily
    writes the tokens named in `script` (vocabulary entries: "<think>", "▁is", "<0x0A>", ...)."""
    fmt = FORMATS[format_name]
    tokens, types, scores = _vocab(fmt)
    ids = {t: i for i, t in enumerate(tokens)}
    chain = [start] + list(script)
    missing = [t for t in chain if t not in ids]
    if missing or len(set(chain)) != len(chain):
        raise ValueError(f"script tokens must be distinct vocabulary entries (missing: {missing})")
    n_embd, n_ff, n_vocab = 64, 32, len(tokens)
    if len(chain) > n_embd:
        raise ValueError(f"a script has at most {n_embd - 1} tokens")
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((n_vocab, n_embd)).astype(np.float32)
    basis = np.linalg.qr(rng.standard_normal((n_embd, n_embd)))[0].astype(np.float32)
    for k, t in enumerate(chain):
        emb[ids[t]] = basis[k] * np.sqrt(n_embd)  # RMS 1, as the norm leaves it
    out = np.zeros((n_vocab, n_embd), np.float32)
    for prev, nxt in zip(chain, chain[1:]):
        out[ids[nxt]] = basis[chain.index(prev)] * (SCALE / np.sqrt(n_embd))

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("scripted-" + format_name)
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // 2)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    w.add_chat_template(fmt.source())
    zero = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    tensors = {"token_embd.weight": emb, "output_norm.weight": np.ones(n_embd, np.float32), "output.weight": out,
               "blk.0.attn_norm.weight": np.ones(n_embd, np.float32), "blk.0.ffn_norm.weight": np.ones(n_embd, np.float32),
               "blk.0.attn_q.weight": zero(n_embd, n_embd), "blk.0.attn_k.weight": zero(n_embd, n_embd),
               "blk.0.attn_v.weight": zero(n_embd, n_embd), "blk.0.attn_output.weight": zero(n_embd, n_embd),
               "blk.0.ffn_gate.weight": zero(n_ff, n_embd), "blk.0.ffn_up.weight": zero(n_ff, n_embd),
               "blk.0.ffn_down.weight": zero(n_embd, n_ff)}
    for name, a in tensors.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)
