"""Tiny draft heads and a tiny hybrid target, written on the fly with the `gguf` package (tests, `localspec doctor`'s
head self-test, the benchmarks' plumbing checks), beside runtime/tinymodel.py's tiny llama targets.

    write_qwen35(path, mtp=True)          a qwen35 target: one gated DeltaNet (recurrent) layer, one attention layer,
                                          and a NextN (MTP) block; llama.cpp needs at least one recurrent layer
    write_step35(path, nextn=2)           a step35 target with chained NextN blocks (one per drafted token)
    write_eagle3(path, target, layers)    an EAGLE-3 head for a tiny llama or qwen35 target
    write_dflash(path, target, layers)    a DFlash block drafter for one

Every file has tinymodel's vocabulary "a" (a SentencePiece vocabulary with ChatML, so text prompts work) and its
output layer's structure: each ordinary token's logits peak at its successor on one random cycle over the vocabulary,
and the layers perturb that. The MTP block and the EAGLE-3 head are built to follow the same cycle from the token
they are given (their residual stream is that token's embedding), so they agree with the target often but not
always: drafts are accepted in part, as real heads' are. The DFlash drafter's weights are plain random (its drafts are
accepted by chance). Same arguments, byte-identical file.

llama.cpp's own architecture tests (vendor/llama.cpp/tests/test-llama-archs.cpp) skip EAGLE-3 and DFlash and write
no NextN layers; nothing upstream writes these.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from localspec.runtime.tinymodel import CHATML, UNK, _vocab, _weights, add_tokenizer

N_EMBD = 64
N_HEAD = 2  # head size 32: qwen35's rope sections [8, 4, 4, 0] cover its 16 rotary pairs
N_FF = 128


def _common(w: gguf.GGUFWriter, tokens, scores, types, n_layer: int, n_embd: int = N_EMBD, n_head: int = N_HEAD,
            template: bool = True) -> None:
    w.add_context_length(2048)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    add_tokenizer(w, tokens, scores, types, CHATML if template else None)


def _write(w: gguf.GGUFWriter, tensors: dict[str, np.ndarray]) -> None:
    for name, a in tensors.items():
        w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _rand(rng: np.random.Generator, shape, scale: float = 1.0) -> np.ndarray:
    return (scale / np.sqrt(shape[-1]) * rng.standard_normal(shape)).astype(np.float32)


def read_tensors(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of a GGUF file as float32 numpy arrays in the writer's shapes (numpy references in tests)."""
    r = gguf.GGUFReader(str(path))
    return {t.name: np.array(t.data, dtype=np.float32).reshape([int(d) for d in reversed(t.shape)])
            for t in r.tensors}


def _attn_block(rng: np.random.Generator, p: str, n_embd: int, hd: int, scale: float) -> dict[str, np.ndarray]:
    """A qwen35 full-attention block (gated query, q/k norms) with weights `scale` times the usual size."""
    return {p + "attn_norm.weight": np.ones(n_embd, np.float32),
            p + "post_attention_norm.weight": np.ones(n_embd, np.float32),
            p + "attn_q.weight": _rand(rng, (2 * n_embd, n_embd), scale),
            p + "attn_k.weight": _rand(rng, (n_embd, n_embd), scale),
            p + "attn_v.weight": _rand(rng, (n_embd, n_embd), scale),
            p + "attn_output.weight": _rand(rng, (n_embd, n_embd), scale),
            p + "attn_q_norm.weight": np.ones(hd, np.float32), p + "attn_k_norm.weight": np.ones(hd, np.float32),
            p + "ffn_gate.weight": _rand(rng, (N_FF, n_embd), scale),
            p + "ffn_up.weight": _rand(rng, (N_FF, n_embd), scale),
            p + "ffn_down.weight": _rand(rng, (n_embd, N_FF), scale)}


def write_qwen35(path, *, seed: int = 0, mtp: bool = True, recurrent: int = 1, attention: int = 1,
                 mtp_scale: float = 0.3, mtp_only: bool = False, trunk_scale: float = 1.2) -> Path:
    """A tiny qwen35 (Qwen3.5) target: `recurrent` gated-DeltaNet layers, then `attention` full-attention layers,
    and (with `mtp`) one NextN block after them. The NextN block's eh_proj passes the token's embedding through
    (its other half, the target's hidden state, at `mtp_scale`), so it predicts the cycle's successor of its token.
    `mtp_only`: the same file without the trunk's layers, as `convert_hf_to_gguf.py --mtp` writes an mtp-*.gguf
    to go beside its model (the same seed gives the same NextN block)."""
    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab("a")
    n_trunk = recurrent + attention
    n_all = n_trunk + (1 if mtp else 0)
    hd = N_EMBD // N_HEAD
    base = _weights(rng, types, 0, N_EMBD, N_FF)  # embeddings and the cycle-following output layer
    t = dict(base)
    w = gguf.GGUFWriter(str(path), "qwen35")
    w.add_name(f"tiny-qwen35-s{seed}" + ("-mtp" if mtp else ""))
    _common(w, tokens, scores, types, n_all)
    if mtp:
        w.add_nextn_predict_layers(1)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(hd)
    w.add_rope_dimension_sections([8, 4, 4, 0])
    w.add_rope_freq_base(10000.0)
    # Layer i is full attention when (i + 1) % interval == 0: the recurrent layers first, then attention.
    w.add_full_attention_interval(recurrent + 1)
    w.add_ssm_conv_kernel(4)
    w.add_ssm_inner_size(32)
    w.add_ssm_state_size(16)
    w.add_ssm_time_step_rank(2)
    w.add_ssm_group_count(2)
    s = trunk_scale  # how far the trunk's layers pull the target off the cycle (a head follows the cycle)
    for i in range(n_trunk):
        p = f"blk.{i}."
        if (i + 1) % (recurrent + 1) != 0:  # gated DeltaNet: d_state 16, 2 key groups, 2 value heads, inner 32
            t.update({p + "attn_norm.weight": np.ones(N_EMBD, np.float32),
                      p + "post_attention_norm.weight": np.ones(N_EMBD, np.float32),
                      p + "attn_qkv.weight": _rand(rng, (96, N_EMBD), s), p + "attn_gate.weight": _rand(rng, (32, N_EMBD), s),
                      p + "ssm_conv1d.weight": _rand(rng, (96, 4), s), p + "ssm_dt.bias": np.zeros(2, np.float32),
                      p + "ssm_a": -np.ones(2, np.float32), p + "ssm_beta.weight": _rand(rng, (2, N_EMBD), s),
                      p + "ssm_alpha.weight": _rand(rng, (2, N_EMBD), s), p + "ssm_norm.weight": np.ones(16, np.float32),
                      p + "ssm_out.weight": _rand(rng, (N_EMBD, 32), s),
                      p + "ffn_gate.weight": _rand(rng, (N_FF, N_EMBD), s), p + "ffn_up.weight": _rand(rng, (N_FF, N_EMBD), s),
                      p + "ffn_down.weight": _rand(rng, (N_EMBD, N_FF), s)})
        else:
            t.update(_attn_block(rng, p, N_EMBD, hd, s))
    if mtp:
        p = f"blk.{n_trunk}."
        t.update(_attn_block(rng, p, N_EMBD, hd, mtp_scale))
        eh = np.zeros((N_EMBD, 2 * N_EMBD), np.float32)
        eh[:, :N_EMBD] = np.eye(N_EMBD, dtype=np.float32)  # the token's (normed) embedding, passed through
        eh[:, N_EMBD:] = _rand(rng, (N_EMBD, N_EMBD), mtp_scale)
        t.update({p + "nextn.eh_proj.weight": eh, p + "nextn.enorm.weight": np.ones(N_EMBD, np.float32),
                  p + "nextn.hnorm.weight": np.ones(N_EMBD, np.float32)})
    if mtp_only:
        t = {k: v for k, v in t.items() if not k.startswith("blk.") or int(k.split(".")[1]) >= n_trunk}
    _write(w, t)
    return Path(path)


def write_step35(path, *, seed: int = 0, trunk: int = 2, nextn: int = 2, trunk_scale: float = 1.3,
                 mtp_scale: float = 0.3) -> Path:
    """A tiny step35 (Step-3.5) target with `nextn` chained NextN blocks (the draft runs one block per drafted
    token, llama_set_nextn_layer_offset choosing it): dense FFNs, no experts, layer 0 with a sliding window
    wider than any test's context (llama.cpp's step35 graph needs one windowed layer), the NextN blocks built as
    write_qwen35's."""
    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab("a")
    hd = N_EMBD // N_HEAD
    t = dict(_weights(rng, types, 0, N_EMBD, N_FF))
    w = gguf.GGUFWriter(str(path), "step35")
    w.add_name(f"tiny-step35-s{seed}-mtp{nextn}")
    _common(w, tokens, scores, types, trunk + nextn)
    w.add_nextn_predict_layers(nextn)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(10000.0)
    w.add_uint32("step35.expert_feed_forward_length", N_FF)
    w.add_uint32("step35.attention.sliding_window", 4096)
    w.add_array("step35.attention.sliding_window_pattern", [True] + [False] * (trunk + nextn - 1))
    for i in range(trunk + nextn):
        p, s = f"blk.{i}.", trunk_scale if i < trunk else mtp_scale
        t.update({p + "attn_norm.weight": np.ones(N_EMBD, np.float32), p + "ffn_norm.weight": np.ones(N_EMBD, np.float32),
                  p + "attn_q.weight": _rand(rng, (N_EMBD, N_EMBD), s), p + "attn_k.weight": _rand(rng, (N_EMBD, N_EMBD), s),
                  p + "attn_v.weight": _rand(rng, (N_EMBD, N_EMBD), s),
                  p + "attn_output.weight": _rand(rng, (N_EMBD, N_EMBD), s),
                  p + "ffn_gate.weight": _rand(rng, (N_FF, N_EMBD), s), p + "ffn_up.weight": _rand(rng, (N_FF, N_EMBD), s),
                  p + "ffn_down.weight": _rand(rng, (N_EMBD, N_FF), s)})
        if i >= trunk:
            eh = np.zeros((N_EMBD, 2 * N_EMBD), np.float32)
            eh[:, :N_EMBD] = np.eye(N_EMBD, dtype=np.float32)
            eh[:, N_EMBD:] = _rand(rng, (N_EMBD, N_EMBD), mtp_scale)
            t.update({p + "nextn.eh_proj.weight": eh, p + "nextn.enorm.weight": np.ones(N_EMBD, np.float32),
                      p + "nextn.hnorm.weight": np.ones(N_EMBD, np.float32)})
    _write(w, t)
    return Path(path)


def _target_info(target) -> tuple[dict[str, np.ndarray], int, int]:
    """A tiny target's tensors, its embedding width and trunk layer count (NextN blocks not counted)."""
    r = gguf.GGUFReader(str(target))

    def field(key: str):
        f = r.get_field(key)
        return f.contents() if f is not None else None

    arch = str(field("general.architecture"))
    n_layer = int(field(f"{arch}.block_count")) - int(field(f"{arch}.nextn_predict_layers") or 0)
    t = read_tensors(target)
    return t, t["token_embd.weight"].shape[1], n_layer


def write_eagle3(path, target, layers=(0, 1, 2), *, seed: int = 1, follow: float = 0.4) -> Path:
    """An EAGLE-3 head for `target` reading its `layers` (an id equal to the target's layer count reads its last
    hidden state). Its attention attends to its own token (query and key are that token's embedding, scaled up) and
    writes it into the residual stream (x3 `follow`, over the encoded g), so it predicts the cycle's successor of its
    token; no token_embd of its own (it borrows the target's, as heads without one do), a copy of the target's
    output layer."""
    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab("a")
    tt, n_embd_t, _ = _target_info(target)
    n_embd = N_EMBD
    w = gguf.GGUFWriter(str(path), "eagle3")
    w.add_name(f"tiny-eagle3-s{seed}")
    _common(w, tokens, scores, types, 1, template=False)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // N_HEAD)
    w.add_rope_freq_base(10000.0)
    w.add_array("eagle3.target_layers", [int(i) for i in layers])  # PyPI gguf lacks add_target_layers
    w.add_uint32("eagle3.target_hidden_size", n_embd_t)
    eye = np.eye(n_embd, dtype=np.float32)
    half = lambda a: np.concatenate([a, np.zeros_like(a)], axis=1)  # noqa: E731 - reads the token half only
    t = {"fc.weight": _rand(rng, (n_embd, len(layers) * n_embd_t)),
         "output_norm.weight": np.ones(n_embd, np.float32), "output.weight": tt["output.weight"].copy(),
         "blk.0.attn_norm.weight": np.ones(n_embd, np.float32), "blk.0.attn_norm_2.weight": np.ones(n_embd, np.float32),
         "blk.0.attn_q.weight": half(2.0 * eye), "blk.0.attn_k.weight": half(2.0 * eye),
         "blk.0.attn_v.weight": half(eye), "blk.0.attn_output.weight": 3.0 * follow * eye,
         "blk.0.ffn_norm.weight": np.ones(n_embd, np.float32),
         "blk.0.ffn_gate.weight": _rand(rng, (N_FF, n_embd), 0.3), "blk.0.ffn_up.weight": _rand(rng, (N_FF, n_embd), 0.3),
         "blk.0.ffn_down.weight": _rand(rng, (n_embd, N_FF), 0.3)}
    _write(w, t)
    return Path(path)


def write_dflash(path, target, layers=(0, 1), *, seed: int = 2, block_size: int = 4, n_layer: int = 2,
                 mask_token: int = UNK, dspark: bool = False, rank: int = 16) -> Path:
    """A DFlash block drafter for `target`, reading its `layers`' inputs (ids below the layer count: llama.cpp's graphs keep no input past the last layer), with plain random weights; trained block size `block_size` (drafts block_size - 1 tokens), the mask
    token `mask_token` of the target's vocabulary. Embeddings and output layer borrowed from the target. `dspark`:
    with DSpark's Markov head (rank `rank`, conditioning each position on the token before it) and its confidence
    head, anchor-first blocks."""
    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab("a")
    _, n_embd_t, _ = _target_info(target)
    n_embd = N_EMBD
    hd = n_embd // N_HEAD
    w = gguf.GGUFWriter(str(path), "dflash")
    w.add_name(f"tiny-dflash-s{seed}")
    _common(w, tokens, scores, types, n_layer, template=False)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(10000.0)
    w.add_array("dflash.target_layers", [int(i) for i in layers])
    w.add_uint32("dflash.block_size", block_size)
    w.add_causal_attention(False)
    w.add_mask_token_id(mask_token)
    t = {"fc.weight": _rand(rng, (n_embd, len(layers) * n_embd_t)), "enc.output_norm.weight": np.ones(n_embd, np.float32),
         "output_norm.weight": np.ones(n_embd, np.float32)}
    for i in range(n_layer):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": np.ones(n_embd, np.float32), p + "ffn_norm.weight": np.ones(n_embd, np.float32),
                  p + "attn_q.weight": _rand(rng, (n_embd, n_embd)), p + "attn_k.weight": _rand(rng, (n_embd, n_embd)),
                  p + "attn_v.weight": _rand(rng, (n_embd, n_embd)), p + "attn_output.weight": _rand(rng, (n_embd, n_embd)),
                  p + "attn_q_norm.weight": np.ones(hd, np.float32), p + "attn_k_norm.weight": np.ones(hd, np.float32),
                  p + "ffn_gate.weight": _rand(rng, (N_FF, n_embd)), p + "ffn_up.weight": _rand(rng, (N_FF, n_embd)),
                  p + "ffn_down.weight": _rand(rng, (n_embd, N_FF))})
    if dspark:
        n_vocab = len(tokens)
        t.update({"markov_w1.weight": _rand(rng, (n_vocab, rank), 4.0), "markov_w2.weight": _rand(rng, (n_vocab, rank)),
                  "conf_proj.weight": _rand(rng, (1, n_embd + rank)), "conf_proj.bias": np.zeros(1, np.float32)})
    _write(w, t)
    return Path(path)
