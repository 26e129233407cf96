#!/usr/bin/env python3
"""Write a llama-architecture GGUF with random weights of a real model's shape and a real tokenizer.

    python benchmarks/gpu/mkrand.py OUT.gguf VOCAB.gguf N_EMBD N_LAYER N_HEAD N_KV N_FF [q4_0|q8_0]
                                    [OUT2.gguf N_EMBD N_LAYER N_HEAD N_KV N_FF q4_0|q8_0]...

Why random weights: a GPU machine without network has no model files, and timing needs only the shapes (its text
is noise; drafts from n-gram lookup are accepted more than on real text, so acceptance figures mean nothing). The
tokenizer and chat template are copied from VOCAB.gguf (llama.cpp ships vocab-only files such as
models/ggml-vocab-qwen2.gguf; any GGUF with a tokenizer will do). Weights come from one bank of random quantized
blocks tiled over every tensor: fast to write, never zero, scales chosen so activations stay finite.

Several models from one vocabulary in one call: reading Qwen2's 152k-token vocabulary takes gguf's reader about a
minute on a busy 2-core machine, so it is read once.

Shapes used by benchmarks/gpu/run.sh: an 8B llama-3 shape `4096 32 32 8 14336 q4_0`, a 0.5B draft shape
`896 24 14 2 4864 q8_0`.
"""

from __future__ import annotations

import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFWriter

BLOCK = 32  # elements per Q4_0 / Q8_0 block
BANK_BLOCKS = 1 << 18


def bank(rng: np.random.Generator, qtype: Q, scale: float) -> np.ndarray:
    """Random quantized blocks whose dequantized values have about `scale` as standard deviation."""
    if qtype == Q.Q4_0:  # f16 scale, then 16 bytes of 4-bit values (-8..7: std 4.6)
        b = np.empty((BANK_BLOCKS, 18), np.uint8)
        b[:, 2:] = rng.integers(0, 256, (BANK_BLOCKS, 16), dtype=np.uint8)
        d = scale / 4.6
    else:  # f16 scale, then 32 int8 values (std 73.9)
        b = np.empty((BANK_BLOCKS, 34), np.uint8)
        b[:, 2:] = rng.integers(0, 256, (BANK_BLOCKS, 32), dtype=np.uint8)
        d = scale / 73.9
    b[:, :2] = np.frombuffer(np.float16(d).tobytes(), np.uint8)
    return b


def read_vocab(vocab_path: str) -> list:
    """The tokenizer's GGUF fields (key, value, type, sub-type) of VOCAB.gguf."""
    r = GGUFReader(vocab_path)
    if "tokenizer.ggml.tokens" not in r.fields:
        raise ValueError(f"{vocab_path} has no tokenizer")
    return [(k, f.contents(), f.types[0], f.types[1] if len(f.types) > 1 else None)
            for k, f in r.fields.items() if k.startswith("tokenizer.")]


def write(out: str, vocab: list, n_embd: int, n_layer: int, n_head: int, n_kv: int, n_ff: int,
          quant: str = "q4_0") -> str:
    if quant not in ("q4_0", "q8_0"):
        raise ValueError(f"quantization must be q4_0 or q8_0, not {quant!r}")
    qtype = Q.Q4_0 if quant == "q4_0" else Q.Q8_0
    if n_embd % n_head or n_head % n_kv or n_embd % BLOCK or n_ff % BLOCK:
        raise ValueError("N_EMBD must divide by N_HEAD and by 32, N_HEAD by N_KV, N_FF by 32")
    rng = np.random.default_rng(0)
    n_vocab = len(next(v for k, v, *_ in vocab if k == "tokenizer.ggml.tokens"))
    w = GGUFWriter(out, "llama")

    def qtensor(name: str, rows: int, cols: int, scale: float) -> None:
        b = bank(rng, qtype, scale)
        blocks = np.resize(b, (rows * cols // BLOCK, b.shape[1])).reshape(rows, -1)
        w.add_tensor(name, blocks, raw_dtype=qtype)

    w.add_name(f"random-{n_embd}x{n_layer}")
    w.add_block_count(n_layer)
    w.add_context_length(8192)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(2 if qtype == Q.Q4_0 else 7)  # MOSTLY_Q4_0 / MOSTLY_Q8_0
    for k, value, vtype, sub in vocab:
        w.add_key_value(k, value, vtype, sub_type=sub)
    hd = n_embd // n_head
    qtensor("token_embd.weight", n_vocab, n_embd, 1.0)
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    qtensor("output.weight", n_vocab, n_embd, n_embd ** -0.5)
    for i in range(n_layer):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, np.float32))
        qtensor(p + "attn_q.weight", n_head * hd, n_embd, n_embd ** -0.5)
        qtensor(p + "attn_k.weight", n_kv * hd, n_embd, n_embd ** -0.5)
        qtensor(p + "attn_v.weight", n_kv * hd, n_embd, n_embd ** -0.5)
        qtensor(p + "attn_output.weight", n_embd, n_head * hd, (n_head * hd) ** -0.5)
        qtensor(p + "ffn_gate.weight", n_ff, n_embd, n_embd ** -0.5)
        qtensor(p + "ffn_up.weight", n_ff, n_embd, n_embd ** -0.5)
        qtensor(p + "ffn_down.weight", n_embd, n_ff, n_ff ** -0.5)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return f"{out}: {n_vocab} vocab, {n_embd}x{n_layer}, {qtype.name}"


def main(argv: list[str]) -> int:
    more = argv[8:]
    if len(argv) < 7 or (more and (len(argv) < 8 or len(more) % 7)):
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    models = [[argv[0], *argv[2:8]]] + [more[i:i + 7] for i in range(0, len(more), 7)]
    try:
        vocab = read_vocab(argv[1])
        for out, *shape in models:
            print(write(out, vocab, *map(int, shape[:5]), *(shape[5:] or ["q4_0"])))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
