"""benchmarks/gpu/: the parts of the GPU kit that run without a GPU (random-weight models of real shapes, the
summary of a run) on real llama.cpp here."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.model import Model, ModelSettings

KIT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu"


def _mkrand(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(KIT / "mkrand.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_mkrand_writes_models_llama_cpp_loads_and_decodes(tmp_path, tiny_target):
    # Two models from one read of the vocabulary (the tiny model's tokenizer), GQA shapes, both quantizations.
    a, b = tmp_path / "r-q4_0.gguf", tmp_path / "r-q8_0.gguf"
    proc = _mkrand(a, tiny_target, 128, 2, 4, 2, 256, "q4_0", b, 64, 1, 4, 1, 128, "q8_0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith("128x2, Q4_0") and proc.stdout.splitlines()[1].endswith("64x1, Q8_0")
    for path, layers in ((a, 3), (b, 2)):
        model = Model(path, ModelSettings(n_gpu_layers=0))
        ctx = Context(model, ContextSettings(n_ctx=64, n_batch=16, n_threads=1))
        toks = model.tokenize("read the file name")
        ctx.decode(toks, "all")
        rows = [ctx.logits(i) for i in range(len(toks))]
        assert all(math.isfinite(float(x)) for r in rows for x in r)  # scales keep activations finite
        assert len({int(r.argmax()) for r in rows}) > 1  # not a constant model
        assert model.placement["layers"] == {"CPU": layers}
        ctx.close()
        model.close()


def test_mkrand_bad_shapes_are_one_line(tmp_path, tiny_target):
    proc = _mkrand(tmp_path / "x.gguf", tiny_target, 100, 2, 3, 1, 256)
    assert proc.returncode == 1 and proc.stderr.startswith("error:") and len(proc.stderr.splitlines()) == 1
    proc = _mkrand(tmp_path / "x.gguf", tiny_target, 128, 2, 4, 2, 256, "q5_k")
    assert proc.returncode == 1 and "q4_0 or q8_0" in proc.stderr
    assert _mkrand(tmp_path / "x.gguf").returncode == 2  # usage
    assert _mkrand(tmp_path / "x.gguf", tiny_target, 128, 2, 4, 2, 256, "q4_0", tmp_path / "y.gguf", 64).returncode == 2


def test_run_sh_parses():
    assert subprocess.run(["bash", "-n", str(KIT / "run.sh")]).returncode == 0
    assert subprocess.run(["bash", "-n", str(KIT / "prepare.sh")]).returncode == 0


def test_summary_puts_each_figure_beside_its_bar(tmp_path):
    profile = json.loads((KIT / "h200-8b-q4_0+0.5b-q8_0.json").read_text())
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    (tmp_path / "doctor.json").write_text(json.dumps({"self_test": [
        {"device": "CPU", "ok": True, "failure": None, "layers": {"CPU": 3}},
        {"device": "CUDA0", "ok": True, "failure": None, "layers": {"CUDA0": 3}}]}))
    (tmp_path / "run_nodraft.json").write_text(json.dumps({"stats": {"tokens_per_second": 250.0}}))
    (tmp_path / "run_default.json").write_text(json.dumps({"stats": {"tokens_per_second": 500.0,
                                                                     "mean_accepted_length": 3.0}}))
    (tmp_path / "verify_cost.json").write_text(json.dumps({
        "target": {"passes": {"8": {"ratio_last": 1.05, "ratio_all": 1.4}}},
        "draft": {"warm_up_step_s": 0.0015, "ratio": 1.06}}))
    (tmp_path / "bench_multiturn.json").write_text(json.dumps({"configs": {
        "baseline": {"speedup": 1.0, "projected_speedup": 1.0}, "toolspec": {"speedup": 2.0, "projected_speedup": 1.9}}}))
    out = subprocess.run([sys.executable, str(KIT / "summary.py"), str(tmp_path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert [t["device"] for t in s["self_test"]] == ["CPU", "CUDA0"]
    assert s["target_only"]["ratio"] == pytest.approx(250 * profile["target"]["step_s"], abs=1e-3)
    assert s["verify"]["8"] == {"ratio_last": 1.05, "ratio_all": 1.4}
    assert s["draft_price"]["ratio"] == 1.06
    assert s["drafting"]["speedup"] == 2.0
    assert s["suites"]["multiturn"]["toolspec"]["projected_speedup"] == 1.9
    # A run whose steps were all skipped still summarises (nothing to say).
    empty = tmp_path / "empty"
    empty.mkdir()
    out = subprocess.run([sys.executable, str(KIT / "summary.py"), str(empty)], capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout) == {}
