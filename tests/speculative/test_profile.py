"""Cost profiles: llama-bench's figures from another machine turned into prices (tables, no model), a run projected
onto that machine, and `localspec bench --cost-profile` on a real (tiny) model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from localspec.errors import ConfigError
from localspec.speculative.profile import (
    FORMAT,
    CostProfile,
    model_costs,
    profile_from_llama_bench,
    projected_s,
    read_jsonl,
)
from localspec.speculative.stats import Stats

ROOT = Path(__file__).resolve().parents[2]
H200_JSONL = ROOT / "benchmarks" / "gpu" / "h200-llama-bench.jsonl"
H200_PROFILE = ROOT / "benchmarks" / "gpu" / "h200-8b-q4_0+0.5b-q8_0.json"


def _records() -> list[dict]:
    return read_jsonl(H200_JSONL.read_text().splitlines())


def test_h200_figures_as_issue_25_reports_them():
    t = model_costs(_records(), "t8")
    assert t["step_s"] == pytest.approx(0.00384, rel=0.01)  # 260 tok/s
    # A pass of k rows against a single step (issue 25 item 7), within 2%.
    for k, x in {2: 0.92, 4: 1.11, 8: 1.54, 16: 1.82, 32: 2.22, 64: 2.89}.items():
        assert t["pass_x_step"][str(k)] == pytest.approx(x, rel=0.02)
    d = model_costs(_records(), "d05")
    assert d["step_s"] / t["step_s"] == pytest.approx(0.37, abs=0.01)  # a 0.5B step: 37% of the 8B's
    assert not t["logits_row_measured"] and t["logits_row_s"] == 0.0


def test_the_committed_h200_profile_is_what_profile_py_makes():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "profile.py"), str(H200_JSONL),
                          "--target", "t8", "--draft", "d05"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(H200_PROFILE.read_text())


@pytest.mark.parametrize("name,error", [
    ("gguf", "matches several models"),
    ("llama3-70b", "no llama-bench record for a model matching 'llama3-70b'"),
])
def test_model_names_that_do_not_pick_one_model(name, error):
    with pytest.raises(ConfigError, match=error):
        model_costs(_records(), name)


def test_profile_script_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text("{oops\n")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "profile.py"), str(bad), "--target", "a"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.startswith("error:") and len(out.stderr.splitlines()) == 1
    assert "line 1: not JSON" in out.stderr


def _rec(n_prompt: int, n_gen: int, ms: list[float], embd: bool = False) -> dict:
    per = n_gen if n_prompt == 0 else 1
    return {"model_filename": "/m/x.gguf", "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": 0, "embeddings": embd,
            "samples_ns": [m * 1e6 * per for m in ms], "avg_ns": 0}


def test_steady_state_medians_and_logits_rows_from_embd_runs():
    recs = [_rec(0, 32, [30.0, 10.0, 10.2, 9.9]),  # the first repetition is a warm-up: dropped
            _rec(4, 0, [50.0, 14.0, 14.0, 14.0]), _rec(16, 0, [60.0, 26.0, 25.0, 27.0]),
            # -embd 1: every row's logits; 1 ms more per row beyond the first
            _rec(4, 0, [90.0, 17.0, 17.0, 17.0], embd=True), _rec(16, 0, [99.0, 41.0, 40.0, 41.0], embd=True)]
    c = model_costs(recs, "x.gguf")
    assert c["step_s"] == pytest.approx(0.010)
    assert c["pass_s"] == pytest.approx({"1": 0.010, "4": 0.014, "16": 0.026})
    assert c["logits_row_measured"] and c["logits_row_s"] == pytest.approx(0.001)


def _profile(logits_row_s: float = 0.0, draft: bool = True) -> CostProfile:
    target = {"step_s": 0.004, "pass_s": {"1": 0.004, "2": 0.0037, "8": 0.006, "32": 0.009},
              "logits_row_s": logits_row_s}
    d = {"step_s": 0.0015, "pass_s": {"1": 0.0015, "16": 0.003}}
    return CostProfile({"format": FORMAT, "target": target, "draft": d if draft else None})


@pytest.mark.parametrize("rows,logits,expected", [
    (1, 1, 0.004), (2, 2, 0.0037), (5, 1, 0.0037 + 0.0023 / 2), (8, 8, 0.006), (20, 1, 0.0075),
    (64, 1, 0.009 + 32 * 0.003 / 24),  # beyond the curve: its last slope
])
def test_profile_prices_passes(rows, logits, expected):
    p = _profile()
    assert p.pass_s(rows, logits) == pytest.approx(expected)
    assert p.cost(rows, logits) == p.pass_s(rows, logits)
    assert p.ready and p.single_token_s() == 0.004


def test_profile_prices_logits_rows_and_a_line_for_line_callers():
    p = _profile(logits_row_s=0.0001)
    assert p.pass_s(8, 8) == pytest.approx(0.006 + 7 * 0.0001)
    c0, c1, c2 = p.coefficients()
    assert c2 == 0.0001 and c1 > 0 and c0 + c1 + c2 == pytest.approx(0.004, rel=0.2)
    assert p.marginal_row_s(2) == 0.0  # a pass of 2 is cheaper than 1 there: the row is free, not negative
    assert p.marginal_row_s(8) == pytest.approx((0.006 - 0.0037) / 6 + 0.0001)


def test_what_this_machine_measures_stays_apart():
    p = _profile()
    for n in (1, 1, 4, 8):
        p.observe(n, n, 0.05 * n)  # this CPU: far slower
    assert p.single_token_s() == 0.004 and p.measured.single_token_s() == pytest.approx(0.05)


@pytest.mark.parametrize("data,error", [
    ({"format": "nope"}, "not a localspec cost profile"),
    ({"format": FORMAT, "target": {"step_s": 0.004}}, "target: needs step_s and pass_s"),
    ({"format": FORMAT, "target": {"step_s": 0.004, "pass_s": {"1": 0.004}}}, "two row counts or more"),
    ({"format": FORMAT, "target": {"step_s": 0.004, "pass_s": {"1": 0.004, "x": 1}}}, "needs step_s and pass_s"),
])
def test_bad_profiles(data, error):
    with pytest.raises(ConfigError, match=error):
        CostProfile(data)


def _stats(**kw) -> Stats:
    s = Stats(wall_s=1.0, prefill_s=0.2, decode_s=0.5, draft_decode_s=0.1, **kw)
    return s


@pytest.mark.parametrize("passes,drafts,draft_in_profile,expected", [
    # 0.8 s of generation: 0.5 s of target passes and 0.1 s of draft decodes measured, 0.2 s of bookkeeping kept.
    ({(1, 1): 10}, {}, True, 10 * 0.004 + 0.2),
    ({(8, 8): 4, (2, 1): 2}, {(1, 1): 12, (16, 1): 1}, True, 4 * 0.006 + 2 * 0.0037 + 12 * 0.0015 + 0.003 + 0.2),
    # No draft model in the profile: its decodes keep the time measured here.
    ({(8, 8): 4}, {(1, 1): 12}, False, 4 * 0.006 + 0.1 + 0.2),
])
def test_projection(passes, drafts, draft_in_profile, expected):
    s = _stats(pass_shapes=Counter(passes), draft_shapes=Counter(drafts))
    assert projected_s(s, _profile(draft=draft_in_profile)) == pytest.approx(expected)


def test_profile_from_llama_bench_names_the_machine():
    p = profile_from_llama_bench(_records(), "t8", "d05")
    assert p["format"] == FORMAT and p["machine"]["gpu_info"] == "NVIDIA H200"
    prof = CostProfile(p)
    assert prof.draft_step_s() == pytest.approx(0.001415, rel=0.01)
    assert prof.pass_s(16, 1) / prof.single_token_s() == pytest.approx(1.82, rel=0.02)


# -- on a real model ------------------------------------------------------------------------------------------

def _bench(*args):
    return subprocess.run([sys.executable, "-m", "localspec", "bench", *map(str, args)], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_bench_projects_each_config_onto_the_profiles_machine(tiny_pair_paths, tmp_path):
    target, draft = tiny_pair_paths
    suite = ROOT / "benchmarks" / "multiturn.jsonl"
    out = _bench(suite, "--target", target, "--draft", draft, "--configs", "baseline,model,toolspec", "--limit", "1",
                 "--max-tokens", "48", "--cost-profile", H200_PROFILE, "--json")
    assert out.returncode == 0, out.stderr
    configs = json.loads(out.stdout)["configs"]
    assert configs["baseline"]["projected_speedup"] == 1.0
    for name in ("model", "toolspec"):
        assert configs[name]["projected_speedup"] > 0 and configs[name]["speedup"] > 0
    # Without a profile the JSON is as before.
    out = _bench(suite, "--target", target, "--configs", "baseline", "--limit", "1", "--max-tokens", "16", "--json")
    assert out.returncode == 0 and "projected_speedup" not in out.stdout
    missing = _bench(suite, "--target", target, "--cost-profile", tmp_path / "none.json")
    assert missing.returncode == 1 and missing.stderr.startswith("error: cannot read cost profile")
    assert len(missing.stderr.splitlines()) == 1
