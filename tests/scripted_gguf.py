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

import numpy as np

from tests.template_gguf import FORMATS, format_vocab, layer_shapes, write_one_layer_gguf

SCALE = 20.0  # logit of the scripted next token (every other script token: 0)

# A Qwen3 reply with its reasoning: a thought in a `<think>` block, then the answer.
QWEN3_ANSWER = ["<think>", "what", "▁is", "▁it", "</think>", "hello", "▁world", "<|im_end|>"]


def write_scripted_gguf(path, format_name: str, script: list[str], *, start: str = "<0x0A>") -> Path:
    """A GGUF in `format_name`'s vocabulary and template that, after a prompt ending in token `start`, greedily
    writes the tokens named in `script` (vocabulary entries: "<think>", "▁is", "<0x0A>", ...)."""
    fmt = FORMATS[format_name]
    tokens = format_vocab(fmt)[0]
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

    # Norms pass the embedding through; every other layer weight is zero, so the layer adds nothing.
    weights = {k: (np.ones if k.endswith("norm.weight") else np.zeros)(shape, np.float32)
               for k, shape in layer_shapes(n_vocab, n_embd, n_ff).items()}
    return write_one_layer_gguf(path, "scripted-" + format_name, fmt,
                                {**weights, "token_embd.weight": emb, "output.weight": out})
