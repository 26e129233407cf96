#!/usr/bin/env python3
"""Write random-weight GGUFs of today's models with their draft heads, in their real shapes, to price a head's step
against its target's (benchmarks/gpu/head_cost.py; issue 35).

    python benchmarks/gpu/mkheads.py OUT_DIR --vocab-qwen35 ggml-vocab-qwen35.gguf --vocab-qwen3 ggml-vocab-qwen2.gguf
                                     [--layers-9b N] [--layers-8b N] [--quant q4_0|q8_0] [--only NAME,...]

Files (the shapes of the published models; what a shape rests on is said beside it):
    qwen35-9b.gguf          Qwen3.5-9B: 4096 wide, 32 layers as 8 x (3 gated DeltaNet + 1 gated attention), DeltaNet
                            32 value / 16 key heads of 128, attention 16 / 4 heads of 256 with 64 rotary dims, FFN
                            12288, vocabulary 248,320, and its one MTP (NextN) block (Qwen's model card)
    qwen3-8b.gguf           Qwen3-8B: 4096 wide, 36 layers, 32 / 8 heads of 128, FFN 12288, vocabulary 151,936
    qwen3-8b-eagle3.gguf    an EAGLE-3 head for it: one layer as wide as the target (32 / 8 heads, FFN 12288), fc over
                            3 x 4096, its own lm_head over a 32,000-token draft vocabulary with d2t (the Qwen3 EAGLE-3
                            heads published by AngelSlim and RedHatAI)
    qwen3-8b-dflash.gguf    a DFlash drafter for it: 5 layers as wide as the target, fc over 5 of its layers, block
                            16, the target's embeddings and lm_head (z-lab's DFlash drafters for Qwen3/Qwen3.5)

`--layers-9b/--layers-8b` keep the real layer shapes with fewer layers (the head's shapes do not change; the
target's step then scales with its layer count, and head_cost.py says how many it had). Weights are one bank of
random quantized blocks tiled over each tensor (mkrand.py), tokenizers copied from llama.cpp's vocab-only GGUFs
(vendor/llama.cpp/models/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mkrand import BLOCK, bank, read_vocab  # noqa: E402 - the kit's own module beside this one

NAMES = ("qwen35-9b", "qwen3-8b", "qwen3-8b-eagle3", "qwen3-8b-dflash")
SHRINK = 1  # --shrink: widths divided by this (head sizes kept), for checking the kit's plumbing on small files


def _s(n: int) -> int:
    return max(1, n // SHRINK)


class Writer:
    """A GGUF of quantized 2-D tensors (random blocks) and F32 1-D ones."""

    def __init__(self, path: Path, arch: str, quant: str, vocab: list | None):
        self.qtype = Q.Q4_0 if quant == "q4_0" else Q.Q8_0
        self.rng = np.random.default_rng(0)
        self.w = GGUFWriter(str(path), arch)
        self.w.add_file_type(2 if self.qtype == Q.Q4_0 else 7)
        for k, value, vtype, sub in vocab or ():
            self.w.add_key_value(k, value, vtype, sub_type=sub)

    def q(self, name: str, rows: int, cols: int) -> None:
        if cols % BLOCK:
            raise ValueError(f"{name}: {cols} columns do not divide into blocks of {BLOCK}")
        b = bank(self.rng, self.qtype, cols ** -0.5)
        self.w.add_tensor(name, np.resize(b, (rows * cols // BLOCK, b.shape[1])).reshape(rows, -1),
                          raw_dtype=self.qtype)

    def f(self, name: str, *shape: int, value: float | None = 1.0) -> None:
        a = np.full(shape, value, np.float32) if value is not None else \
            (0.1 * self.rng.standard_normal(shape)).astype(np.float32)
        self.w.add_tensor(name, a)

    def close(self) -> None:
        self.w.write_header_to_file()
        self.w.write_kv_data_to_file()
        self.w.write_tensors_to_file()
        self.w.close()


def n_vocab(vocab: list) -> int:
    return len(next(v for k, v, *_ in vocab if k == "tokenizer.ggml.tokens"))


QWEN35_VOCAB = 248320  # Qwen3.5's padded vocabulary; llama.cpp's ggml-vocab-qwen35.gguf lists 151,936 of its tokens


def pad_vocab(vocab: list, n: int) -> list:
    """The vocabulary with unused tokens appended up to `n` (so the embedding and output rows have the real count)."""
    have = n_vocab(vocab)
    if have >= n:
        return vocab
    extra = [f"<|unused_{i}|>" for i in range(n - have)]
    out = []
    for k, v, vtype, sub in vocab:
        if k == "tokenizer.ggml.tokens":
            v = list(v) + extra
        elif k == "tokenizer.ggml.token_type":
            v = list(v) + [5] * len(extra)  # UNUSED
        elif k == "tokenizer.ggml.scores":
            v = list(v) + [0.0] * len(extra)
        out.append((k, v, vtype, sub))
    return out


def _common(w: GGUFWriter, n_embd: int, n_layer: int, n_ff: int, n_head: int, n_kv: int, vocab_n: int) -> None:
    w.add_context_length(8192)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_vocab_size(vocab_n)


def _ffn(x: Writer, p: str, n_embd: int, n_ff: int) -> None:
    x.q(p + "ffn_gate.weight", n_ff, n_embd)
    x.q(p + "ffn_up.weight", n_ff, n_embd)
    x.q(p + "ffn_down.weight", n_embd, n_ff)


def _qwen_attn(x: Writer, p: str, n_embd: int, n_head: int, n_kv: int, hd: int, gated: bool) -> None:
    x.f(p + "attn_norm.weight", n_embd)
    x.q(p + "attn_q.weight", (2 if gated else 1) * n_head * hd, n_embd)
    x.q(p + "attn_k.weight", n_kv * hd, n_embd)
    x.q(p + "attn_v.weight", n_kv * hd, n_embd)
    x.q(p + "attn_output.weight", n_embd, n_head * hd)
    x.f(p + "attn_q_norm.weight", hd)
    x.f(p + "attn_k_norm.weight", hd)


def qwen35_9b(path: Path, vocab: list, layers: int, quant: str) -> str:
    n_embd, n_ff, n_head, n_kv, hd = _s(4096), _s(12288), _s(16), _s(4), 256
    d_state, n_group, n_v = 128, _s(16), _s(32)  # DeltaNet: key heads (groups) 16, value heads 32, both 128 wide
    key_dim, value_dim = d_state * n_group, d_state * n_v
    conv_dim = 2 * key_dim + value_dim
    x = Writer(path, "qwen35", quant, vocab)
    w = x.w
    w.add_name(f"random-qwen35-9b-{layers}")
    _common(w, n_embd, layers + 1, n_ff, n_head, n_kv, n_vocab(vocab))
    w.add_nextn_predict_layers(1)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(64)
    w.add_rope_dimension_sections([11, 11, 10, 0])
    w.add_rope_freq_base(1e7)
    w.add_full_attention_interval(4)
    w.add_ssm_conv_kernel(4)
    w.add_ssm_inner_size(value_dim)
    w.add_ssm_state_size(d_state)
    w.add_ssm_time_step_rank(n_v)
    w.add_ssm_group_count(n_group)
    x.q("token_embd.weight", n_vocab(vocab), n_embd)
    x.f("output_norm.weight", n_embd)
    x.q("output.weight", n_vocab(vocab), n_embd)
    for i in range(layers + 1):
        p = f"blk.{i}."
        x.f(p + "post_attention_norm.weight", n_embd)
        if i < layers and (i + 1) % 4:
            x.f(p + "attn_norm.weight", n_embd)
            x.q(p + "attn_qkv.weight", conv_dim, n_embd)
            x.q(p + "attn_gate.weight", value_dim, n_embd)
            x.f(p + "ssm_conv1d.weight", conv_dim, 4, value=None)
            x.f(p + "ssm_dt.bias", n_v, value=0.0)
            x.f(p + "ssm_a", n_v, value=-1.0)
            x.q(p + "ssm_beta.weight", n_v, n_embd)
            x.q(p + "ssm_alpha.weight", n_v, n_embd)
            x.f(p + "ssm_norm.weight", d_state)
            x.q(p + "ssm_out.weight", n_embd, value_dim)
        else:
            _qwen_attn(x, p, n_embd, n_head, n_kv, hd, gated=True)
        _ffn(x, p, n_embd, n_ff)
        if i == layers:  # the MTP block
            x.q(p + "nextn.eh_proj.weight", n_embd, 2 * n_embd)
            x.f(p + "nextn.enorm.weight", n_embd)
            x.f(p + "nextn.hnorm.weight", n_embd)
    x.close()
    return f"{path}: qwen35 {n_embd}x{layers} + 1 MTP block, {n_vocab(vocab)} vocab, {quant}"


def qwen3_8b(path: Path, vocab: list, layers: int, quant: str) -> str:
    n_embd, n_ff, n_head, n_kv, hd = _s(4096), _s(12288), _s(32), _s(8), 128
    x = Writer(path, "qwen3", quant, vocab)
    w = x.w
    w.add_name(f"random-qwen3-8b-{layers}")
    _common(w, n_embd, layers, n_ff, n_head, n_kv, n_vocab(vocab))
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    x.q("token_embd.weight", n_vocab(vocab), n_embd)
    x.f("output_norm.weight", n_embd)
    x.q("output.weight", n_vocab(vocab), n_embd)
    _qwen3_layers(x, layers, n_embd, n_ff, n_head, n_kv, hd)
    x.close()
    return f"{path}: qwen3 {n_embd}x{layers}, {n_vocab(vocab)} vocab, {quant}"


def _qwen3_layers(x: Writer, n: int, n_embd: int, n_ff: int, n_head: int, n_kv: int, hd: int) -> None:
    for i in range(n):
        p = f"blk.{i}."
        _qwen_attn(x, p, n_embd, n_head, n_kv, hd, gated=False)
        x.f(p + "ffn_norm.weight", n_embd)
        _ffn(x, p, n_embd, n_ff)


def eagle3_8b(path: Path, vocab: list, layers: int, quant: str, draft_vocab: int = 32000) -> str:
    n_embd, n_ff, n_head, n_kv, hd = _s(4096), _s(12288), _s(32), _s(8), 128
    draft_vocab = min(_s(draft_vocab), n_vocab(vocab))
    ids = [2, layers // 2, layers - 3]  # low, middle, high: the layers EAGLE-3 heads read (converter's default)
    x = Writer(path, "eagle3", quant, vocab)
    w = x.w
    w.add_name("random-qwen3-8b-eagle3")
    _common(w, n_embd, 1, n_ff, n_head, n_kv, n_vocab(vocab))
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_array("eagle3.target_layers", ids)
    w.add_uint32("eagle3.target_hidden_size", n_embd)
    x.q("fc.weight", n_embd, 3 * n_embd)
    x.f("output_norm.weight", n_embd)
    x.q("output.weight", draft_vocab, n_embd)
    # d2t: each draft token's id in the target's vocabulary (spread over it, as a frequency-ranked subset is)
    w.add_tensor("d2t", np.linspace(0, n_vocab(vocab) - 1, draft_vocab).astype(np.int64))
    p = "blk.0."
    x.f(p + "attn_norm.weight", n_embd)
    x.f(p + "attn_norm_2.weight", n_embd)
    x.q(p + "attn_q.weight", n_head * hd, 2 * n_embd)
    x.q(p + "attn_k.weight", n_kv * hd, 2 * n_embd)
    x.q(p + "attn_v.weight", n_kv * hd, 2 * n_embd)
    x.q(p + "attn_output.weight", n_embd, n_head * hd)
    x.f(p + "ffn_norm.weight", n_embd)
    _ffn(x, p, n_embd, n_ff)
    x.close()
    return f"{path}: eagle3 head, 1 layer {n_embd} wide, reads {ids}, draft vocab {draft_vocab}, {quant}"


def dflash_8b(path: Path, vocab: list, layers: int, quant: str, n_layer: int = 5, block: int = 16) -> str:
    n_embd, n_ff, n_head, n_kv, hd = _s(4096), _s(12288), _s(32), _s(8), 128
    step = max(1, (layers - 2) // (n_layer - 1))
    ids = [1 + i * step for i in range(n_layer)]  # spread from the bottom: z-lab's read 1, 9, 17, 25, 33 of 36
    x = Writer(path, "dflash", quant, vocab)
    w = x.w
    w.add_name("random-qwen3-8b-dflash")
    _common(w, n_embd, n_layer, n_ff, n_head, n_kv, n_vocab(vocab))
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_array("dflash.target_layers", ids)
    w.add_uint32("dflash.block_size", block)
    w.add_causal_attention(False)
    w.add_mask_token_id(n_vocab(vocab) - 1)
    x.q("fc.weight", n_embd, n_layer * n_embd)
    x.f("enc.output_norm.weight", n_embd)
    x.f("output_norm.weight", n_embd)
    _qwen3_layers(x, n_layer, n_embd, n_ff, n_head, n_kv, hd)
    x.close()
    return f"{path}: dflash drafter, {n_layer} layers {n_embd} wide, reads {ids}, block {block}, {quant}"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--vocab-qwen35", type=Path, help="vocab-only GGUF with Qwen3.5's tokenizer")
    p.add_argument("--vocab-qwen3", type=Path, help="vocab-only GGUF with Qwen2/3's tokenizer")
    p.add_argument("--layers-9b", type=int, default=32)
    p.add_argument("--layers-8b", type=int, default=36)
    p.add_argument("--quant", choices=("q4_0", "q8_0"), default="q4_0")
    p.add_argument("--only", default=",".join(NAMES), help=f"comma-separated subset of {', '.join(NAMES)}")
    p.add_argument("--shrink", type=int, default=1, help="divide the widths by this (tests of the kit: not a price)")
    args = p.parse_args(argv)
    global SHRINK
    SHRINK = max(1, args.shrink)
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    bad = [n for n in only if n not in NAMES]
    if bad or (args.layers_9b % 4) or args.layers_8b < 6:
        print(f"error: unknown {bad}" if bad else "error: --layers-9b must divide by 4, --layers-8b be 6 or more",
              file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        if "qwen35-9b" in only:
            if args.vocab_qwen35 is None:
                raise ValueError("qwen35-9b needs --vocab-qwen35")
            vocab35 = read_vocab(str(args.vocab_qwen35))
            vocab35 = pad_vocab(vocab35, QWEN35_VOCAB) if SHRINK == 1 else vocab35
            print(qwen35_9b(args.out / "qwen35-9b.gguf", vocab35, args.layers_9b, args.quant), flush=True)
        rest = [n for n in only if n != "qwen35-9b"]
        if rest:
            if args.vocab_qwen3 is None:
                raise ValueError(f"{', '.join(rest)} need --vocab-qwen3")
            vocab = read_vocab(str(args.vocab_qwen3))
            makers = {"qwen3-8b": qwen3_8b, "qwen3-8b-eagle3": eagle3_8b, "qwen3-8b-dflash": dflash_8b}
            for name in rest:
                print(makers[name](args.out / f"{name}.gguf", vocab, args.layers_8b, args.quant), flush=True)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
