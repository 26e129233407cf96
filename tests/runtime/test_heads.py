"""runtime/heads.py, head_files.py and staging.py on real llama.cpp: the staging symbols, telling head files apart,
one head step against a numpy reference, the tap's rows, and the errors a head that cannot run gives."""

from __future__ import annotations

import numpy as np
import pytest

from localspec.errors import ModelFileError
from localspec.runtime import staging
from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.head_files import file_head_kind, is_head_file, read_header
from localspec.runtime.heads import HeadError, open_head
from localspec.runtime.llama import lib
from localspec.runtime.model import Model, ModelSettings
from localspec.runtime.pair import load_pair
from localspec.runtime.tinyheads import read_tensors, write_eagle3
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import DraftingConfig


def _rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x) + eps) * w


def _silu(z):
    return z / (1 + np.exp(-z))


def _ffn(w, p, y):
    return w[p + "ffn_down.weight"] @ (_silu(w[p + "ffn_gate.weight"] @ y) * (w[p + "ffn_up.weight"] @ y))


def _ctx(path, load_mtp=False, n_batch=32):
    model = Model(path, ModelSettings(n_gpu_layers=0, load_mtp=load_mtp))
    return Context(model, ContextSettings(n_ctx=256, n_batch=n_batch, n_threads=1))


# -- the staging symbols --------------------------------------------------------------------------------------------

def test_every_staging_symbol_resolves_on_this_build_by_its_mangled_name():
    """llama-ext.h's functions sit outside extern "C": this Linux build exports them under Itanium names."""
    assert staging.missing() == []
    rep = staging.report()
    assert rep["kinds"] == {"mtp": True, "eagle3": True, "dflash": True}
    assert all(name.startswith("_Z") and sym in name for sym, name in rep["symbols"].items())


def test_a_build_without_a_symbol_says_which_and_which_heads_cannot_run(monkeypatch, head_files):
    # A build we do not have here, made by hiding one resolved symbol.
    monkeypatch.setitem(staging.FUNCS, "llama_set_embeddings_layer_inp", None)
    assert staging.missing("eagle3") == ["llama_set_embeddings_layer_inp"] and staging.missing("mtp") == []
    assert staging.report()["kinds"] == {"mtp": True, "eagle3": False, "dflash": False}
    ctx = _ctx(head_files.llama)
    with pytest.raises(HeadError, match="cannot run eagle3 heads: it lacks llama_set_embeddings_layer_inp"):
        open_head(ctx, head_files.eagle3)
    assert ctx.tap is None  # nothing half-attached


def test_a_models_own_mtp_layers_rest_with_a_note_where_the_build_lacks_them(monkeypatch, head_files):
    monkeypatch.setitem(staging.FUNCS, "llama_set_nextn_layer_offset", None)
    pair = load_pair(head_files.qwen35, ctx=ContextSettings(n_ctx=256, n_batch=32, n_threads=1), heads=True)
    try:
        assert pair.head is None and "lacks llama_set_nextn_layer_offset" in pair.head_note
        engine = build_engine(pair, DraftingConfig(drafters=("head", "ngram")))
        stats = engine.generate(pair.target.tokenize("read the file"), GenParams(max_tokens=4)).stats
        assert "lacks llama_set_nextn_layer_offset" in stats.to_dict()["switched_off"]["head"]
    finally:
        pair.close()
    with pytest.raises(HeadError, match="lacks"):  # a head file the user named is an error, not a note
        load_pair(head_files.qwen35_plain, head_files.mtp_only, heads=True)


# -- head files ---------------------------------------------------------------------------------------------------

def test_head_files_are_told_apart_by_their_headers(head_files, tmp_path):
    kinds = {name: file_head_kind(getattr(head_files, name)) for name in
             ("llama", "qwen35", "qwen35_plain", "eagle3", "dflash", "mtp_only")}
    assert kinds == {"llama": None, "qwen35": "mtp", "qwen35_plain": None, "eagle3": "eagle3", "dflash": "dflash",
                     "mtp_only": "mtp"}
    # A model with MTP layers drafts as a model (or with its layers); the layers alone are a head.
    assert [is_head_file(getattr(head_files, n)) for n in ("qwen35", "mtp_only", "eagle3", "dflash", "llama")] == \
        [False, True, True, True, False]
    head = read_header(head_files.eagle3)
    assert head.keys["eagle3.target_layers"] == [0, 1, 2] and "fc.weight" in head.tensors
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(head_files.eagle3.read_bytes()[:200])
    with pytest.raises(ModelFileError, match="corrupt GGUF header") as err:
        read_header(bad)
    assert "\n" not in str(err.value)


# -- one head step against numpy ----------------------------------------------------------------------------------

def test_one_mtp_step_matches_numpy(head_files):
    """The NextN block on the pair (token, h) at a fresh position: one key, so attention is its (gated) value."""
    w = read_tensors(head_files.qwen35)
    ctx = _ctx(head_files.qwen35, load_mtp=True)
    head = open_head(ctx, None)
    try:
        rng = np.random.default_rng(3)
        h = rng.standard_normal(64).astype(np.float32)
        tok = 400
        head.ctx.run([tok], h[None, :], 0, True)
        logits, hn = head.ctx.logits(0).copy(), head.ctx.nextn(0)
        p, eps = "blk.2.", 1e-6
        x = w[p + "nextn.eh_proj.weight"] @ np.concatenate([_rms(w["token_embd.weight"][tok], w[p + "nextn.enorm.weight"], eps),
                                                             _rms(h, w[p + "nextn.hnorm.weight"], eps)])
        a = _rms(x, w[p + "attn_norm.weight"], eps)
        q, v = w[p + "attn_q.weight"] @ a, w[p + "attn_v.weight"] @ a
        gate = np.concatenate([q[k * 64 + 32:k * 64 + 64] for k in range(2)])  # per head: 32 query, 32 gate
        att = w[p + "attn_output.weight"] @ (v / (1 + np.exp(-gate))) + x
        out = _ffn(w, p, _rms(att, w[p + "post_attention_norm.weight"], eps)) + att
        ref_h = _rms(out, w["output_norm.weight"], eps)
        # Within 0.1% of the largest value: llama.cpp keeps K and V in its cache as F16.
        assert np.abs(hn - ref_h).max() < 1e-3 * np.abs(ref_h).max()
        ref = w["output.weight"] @ ref_h
        assert np.abs(logits - ref).max() < 1e-3 * np.abs(ref).max()
        assert int(np.argmax(logits)) == int(np.argmax(ref))
    finally:
        head.close()
        ctx.close()
        ctx.model.close()


def test_one_eagle3_step_and_its_encoder_match_numpy(head_files):
    t = read_tensors(head_files.llama)
    e = read_tensors(head_files.eagle3)
    ctx = _ctx(head_files.llama)
    head = open_head(ctx, head_files.eagle3)
    try:
        toks = ctx.model.tokenize("read the file name")
        ctx.decode(toks, "all")
        rows = head.tap.rows(0, len(toks))  # layer 0's input, layer 1's, the last hidden state: per position
        assert rows.shape == (len(toks), 3 * 64)
        assert np.allclose(rows[:, :64], t["token_embd.weight"][toks], atol=1e-5)  # layer 0 reads the embeddings
        head.ctx.run(None, rows, 0, True, encode=True)
        g = head.ctx.nextn_all(len(toks))
        assert np.abs(g - rows @ e["fc.weight"].T).max() < 1e-4
        head.ctx.clear()
        tok, eps = 500, 1e-5
        head.ctx.run([tok], g[-1:], 0, True)
        logits, prenorm = head.ctx.logits(0).copy(), head.ctx.nextn(0)
        p = "blk.0."
        x = np.concatenate([_rms(t["token_embd.weight"][tok], e[p + "attn_norm.weight"], eps),
                            _rms(g[-1], e[p + "attn_norm_2.weight"], eps)])
        ffn_inp = e[p + "attn_output.weight"] @ (e[p + "attn_v.weight"] @ x) + g[-1]
        out = _ffn(e, p, _rms(ffn_inp, e[p + "ffn_norm.weight"], eps)) + ffn_inp
        # Within 0.1% of the largest value: llama.cpp keeps K and V in its cache as F16.
        assert np.abs(prenorm - out).max() < 1e-3 * np.abs(out).max()
        ref = e["output.weight"] @ _rms(out, e["output_norm.weight"], eps)
        assert np.abs(logits - ref).max() < 1e-3 * np.abs(ref).max() and int(np.argmax(logits)) == int(np.argmax(ref))
    finally:
        head.close()
        ctx.close()
        ctx.model.close()


# -- the tap ------------------------------------------------------------------------------------------------------

def test_the_tap_keeps_the_targets_rows_by_position_through_rollbacks(head_files):
    ctx = _ctx(head_files.qwen35, load_mtp=True, n_batch=8)
    head = open_head(ctx, None)
    try:
        toks = ctx.model.tokenize("read the file name and write the test data to it")
        ctx.prefill(toks)  # in batches of 8
        tap = head.tap
        assert (tap.lo, tap.hi) == (0, len(toks)) and tap.take_low() == 0
        whole = tap.rows(0, len(toks)).copy()
        ref = _ctx(head_files.qwen35, load_mtp=True, n_batch=64)
        ref_head = open_head(ref, None)
        ref.decode(toks, "last")  # one batch: the same rows
        assert np.abs(ref_head.tap.rows(0, len(toks)) - whole).max() < 1e-4
        ref_head.close()
        ref.close()
        ref.model.close()
        ctx.decode([5, 6, 7], "all")
        ctx.truncate(len(toks) + 1)  # a draft rejected after its first token
        assert tap.take_low() == len(toks) + 1 and tap.take_low() is None and tap.hi == len(toks) + 1
        ctx.clear()
        assert tap.hi == 0 and tap.take_low() == 0
    finally:
        head.close()
        ctx.close()
        ctx.model.close()


def test_head_errors_are_one_line(head_files, tmp_path):
    ctx = _ctx(head_files.llama)
    try:
        with pytest.raises(HeadError, match="is not a draft head"):
            open_head(ctx, head_files.llama)
        with pytest.raises(HeadError, match="has no MTP layers"):
            open_head(ctx, None)
        # A head reading a layer the target does not have would abort inside llama.cpp: refused first.
        far = write_eagle3(tmp_path / "far.gguf", head_files.llama, layers=(0, 1, 5))
        with pytest.raises(HeadError, match=r"target layers \[0, 1, 5\] do not fit"):
            open_head(ctx, far)
        assert ctx.tap is None
        # Gemma 4's assistant shares the target's KV cache, a mode the port does not have: said, not run.
        import gguf

        w = gguf.GGUFWriter(str(tmp_path / "assistant.gguf"), "gemma4-assistant")
        w.add_block_count(1)
        w.add_tensor("blk.0.attn_norm.weight", np.ones(8, np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        assert is_head_file(tmp_path / "assistant.gguf")
        with pytest.raises(HeadError, match="Gemma 4 assistant heads .* are not supported yet"):
            open_head(ctx, tmp_path / "assistant.gguf")
        head = open_head(ctx, head_files.eagle3)
        with pytest.raises(HeadError, match="one head per target"):
            open_head(ctx, head_files.dflash)
        head.close()
        assert ctx.tap is None
    finally:
        ctx.close()
        ctx.model.close()


def test_small_batches_on_a_hybrid_target_keep_fewer_snapshots_instead_of_aborting(head_files):
    """llama.cpp keeps the last n_rs_seq + 1 tokens in one ubatch and aborts when it cannot: with a batch of 8 the
    context asks for 6 snapshots, and drafts are capped to them."""
    ctx = _ctx(head_files.qwen35, n_batch=8)
    try:
        assert lib.llama_n_rs_seq(ctx.ptr) == ctx.max_draft == 6
        ctx.prefill(ctx.model.tokenize("read the file name and write the test data"))
        ctx.decode([5, 6, 7, 8, 9, 10, 11], "all")
        ctx.truncate(ctx.n_past - 3)
    finally:
        ctx.close()
        ctx.model.close()
