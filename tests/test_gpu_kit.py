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


@pytest.mark.slow  # five model files written and priced in subprocesses
def test_mkheads_and_head_cost_price_each_head_and_fill_the_profile(tmp_path, tiny_target):
    """The kit's head step on small widths (--shrink: the real files are 4-5 GB; the tiny model's vocabulary): every
    file loads as the head it is, head_cost.py prices its step against its target's, and the profile it writes is one
    speculative/profile.py prices heads with."""
    from localspec.speculative.profile import CostProfile

    out = tmp_path / "heads"
    proc = subprocess.run([sys.executable, str(KIT / "mkheads.py"), str(out), "--vocab-qwen35", str(tiny_target),
                           "--vocab-qwen3", str(tiny_target), "--layers-9b", "4", "--layers-8b", "6", "--shrink", "16"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "1 MTP block" in proc.stdout and "draft vocab" in proc.stdout and "block 16" in proc.stdout
    profile = tmp_path / "profile.json"
    profile.write_text((KIT / "h200-8b-q4_0+0.5b-q8_0.json").read_text())
    for kind, target, head in (("mtp", "qwen35-9b", None), ("eagle3", "qwen3-8b", "qwen3-8b-eagle3"),
                               ("dflash", "qwen3-8b", "qwen3-8b-dflash")):
        cmd = [sys.executable, str(KIT / "head_cost.py"), "--target", str(out / f"{target}.gguf"), "--threads", "1",
               "--steps", "3", "--json", "--profile", str(profile), "--write-profile", str(profile)]
        proc = subprocess.run(cmd + (["--head", str(out / f"{head}.gguf")] if head else []), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        m = json.loads(proc.stdout)
        assert m["head"]["kind"] == kind and m["ratio"] > 0 and m["target"]["step_s"] > 0
        assert set(m["head"]["feed_s"]) == {"1", "2", "4", "8", "16"}
    prof = CostProfile.load(profile)
    assert set(prof.heads) == {"mtp", "eagle3", "dflash"}
    assert 0 < prof.head_step_s("eagle3") and prof.head_step_s("dflash") < json.loads(profile.read_text())[
        "heads"]["dflash"]["step_s"]  # a DFlash token: its block's price over the tokens it drafts
