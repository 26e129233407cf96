"""Runtime layer on real llama.cpp: loading errors, tokenizer, logits rows, KV rollback, compatibility."""

from __future__ import annotations

import re

import numpy as np
import pytest

from localspec.errors import IncompatibleDraftError, ModelFileError
from localspec.runtime.build_info import backend_info
from localspec.runtime.compat import check_draft_compat
from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.model import Model, ModelSettings


def test_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(ModelFileError, match="model file not found"):
        Model(tmp_path / "nope.gguf")


def test_not_a_gguf(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"hello world, not a model")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        Model(bad)


def test_truncated_gguf(tmp_path, tiny_target):
    data = tiny_target.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="could not load"):
        Model(cut)


def test_tokenize_roundtrip_and_metadata(smollm2):
    m = Model(smollm2)
    text = 'héllo ✓ {"name": "read_file", "arguments": {"path": "a.txt"}}'
    assert m.detokenize(m.tokenize(text, add_special=False)) == text
    assert m.n_vocab == 49152
    assert m.is_eog(m.eos)
    assert "im_start" in (m.chat_template or "")
    assert b"".join(m.token_bytes(t) for t in m.tokenize(text, add_special=False)).decode() == text


def test_logits_only_for_requested_rows(tiny_target):
    m = Model(tiny_target)
    ctx = Context(m, ContextSettings(n_ctx=256))
    toks = m.tokenize("the file name is")
    ctx.decode(toks, [False] * (len(toks) - 2) + [True, True])
    assert ctx.logits(len(toks) - 1).shape == (m.n_vocab,)
    assert np.isfinite(ctx.logits(len(toks) - 2)).all()
    with pytest.raises(Exception):
        ctx.logits(0)  # no output was asked for row 0


@pytest.mark.parametrize("fixture", ["tiny_target", "smollm2", "gemma"])
def test_rollback_is_exact(fixture, request):
    """After llama_memory_seq_rm the cache gives identical logits (Gemma's sliding-window cache included)."""
    m = Model(request.getfixturevalue(fixture))
    ctx = Context(m, ContextSettings(n_ctx=1024))
    prompt = m.tokenize("The quick brown fox jumps over the lazy dog. " * 3)
    ctx.prefill(prompt)
    cont = m.tokenize(" And then it ran away to the forest", add_special=False)
    ctx.decode(cont[:2], "none")
    ctx.decode(cont[2:], "all")  # e.g. a draft that gets rejected
    before = np.stack([ctx.logits(i).copy() for i in range(len(cont) - 2)])
    ctx.truncate(len(prompt) + 2)
    assert ctx.n_past == len(prompt) + 2
    ctx.decode(cont[2:], "all")  # same batch shape, so quantized kernels see identical inputs
    after = np.stack([ctx.logits(i).copy() for i in range(len(cont) - 2)])
    np.testing.assert_array_equal(before, after)


def test_prefill_reuses_common_prefix(tiny_target):
    m = Model(tiny_target)
    ctx = Context(m, ContextSettings(n_ctx=256))
    a = m.tokenize("the file name is data")
    assert ctx.prefill(a) == len(a)
    b = a[:-1] + m.tokenize(" code", add_special=False)
    n = ctx.prefill(b)
    assert n == len(b) - (len(a) - 1)
    assert ctx.tokens == b


def test_context_overflow(tiny_target):
    from localspec.errors import ContextOverflowError

    m = Model(tiny_target)
    ctx = Context(m, ContextSettings(n_ctx=64, n_batch=32))  # llama.cpp may round the window up
    ctx.prefill([10 + i % 50 for i in range(ctx.n_ctx - 5)], logits_last=False)
    with pytest.raises(ContextOverflowError, match="context full"):
        ctx.decode(list(range(10, 20)))


def test_compat_ok_and_mismatch(tiny_pair_paths, tiny_other_vocab):
    """A draft of another vocabulary is not refused: it drafts through text, and the difference says why."""
    target, draft = tiny_pair_paths
    assert check_draft_compat(target, draft) is None
    assert re.search(r"token \d+ differs|vocabulary sizes differ", check_draft_compat(target, tiny_other_vocab) or "")


def test_a_file_without_a_vocabulary_cannot_be_paired(tiny_target, tmp_path):
    import gguf

    w = gguf.GGUFWriter(str(tmp_path / "novocab.gguf"), "llama")
    for add, value in ((w.add_context_length, 64), (w.add_embedding_length, 8), (w.add_block_count, 1),
                       (w.add_feed_forward_length, 8), (w.add_head_count, 2), (w.add_layer_norm_rms_eps, 1e-5)):
        add(value)
    w.add_tokenizer_model("none")  # llama.cpp's vocabulary type "none": no text to translate through
    w.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(IncompatibleDraftError, match="novocab.gguf has no vocabulary: it cannot be paired"):
        check_draft_compat(tiny_target, tmp_path / "novocab.gguf")


def test_compat_real_models_differ(smollm2, gemma):
    assert "vocabulary types differ" in (check_draft_compat(gemma, smollm2) or "")


def test_vocab_only_load_is_cheap(gemma):
    m = Model(gemma, ModelSettings(vocab_only=True))
    assert m.n_vocab == 262144


def test_backend_info_reports_cpu():
    info = backend_info()
    assert info["backend"] in ("CPU", "CUDA", "Metal", "Vulkan", "ROCm", "HIP", "SYCL", "OpenCL", "MUSA", "CANN")
    assert any(d["type"] == "CPU" for d in info["devices"])
    assert isinstance(info["gpu_offload"], bool)


def test_llama_errors_go_to_stderr_never_stdout(tmp_path, tiny_target, monkeypatch, capsys):
    """LOCALSPEC_LLAMA_LOG shows llama.cpp's errors; on stdout they would corrupt `run --json`."""
    monkeypatch.setenv("LOCALSPEC_LLAMA_LOG", "1")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_target.read_bytes()[:2000])
    with pytest.raises(ModelFileError):
        Model(cut)
    out, err = capsys.readouterr()
    assert out == "" and "gguf" in err.lower()


@pytest.mark.parametrize("fixture", ["smollm2_f16", "gemma_f16"])
def test_f16_rows_in_a_batch_move_by_hundredths(fixture, request):
    """The README's "When greedy output is exact": with F16 weights a row computed in a batch (a verify pass, a
    prompt read in one go) differs from the same row computed alone by a few hundredths of a logit, so greedy output
    with drafting can differ from the target alone only where its two likeliest tokens are that close. Measured
    with the benchmark that prints the table for any GGUF (benchmarks/batch_rows.py)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "batch_rows", Path(__file__).resolve().parents[2] / "benchmarks" / "batch_rows.py")
    batch_rows = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(batch_rows)
    rows = batch_rows.measure(str(request.getfixturevalue(fixture)), [8, 16, 64], threads=1)
    assert [r["rows"] for r in rows] == [8, 16, 64]
    assert all(r["max_abs"] < 0.1 for r in rows), rows
