"""`localspec bench`: BFCL AST scoring rules and the JSON contract on a real model."""

from __future__ import annotations

import pytest

import json
import os
import subprocess
import sys
from pathlib import Path


from localspec.bench.scoring import call_matches, case_correct

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "bfcl_subset.jsonl"  # shipped, see bfcl_subset.md
MULTI = Path(__file__).resolve().parents[2] / "benchmarks" / "multiturn.jsonl"
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "s": {"type": "string"}, "x": {"type": "number"}, "n": {"type": "integer"}, "l": {"type": "array"},
    "o": {"type": "object"}}, "required": ["s"]}}}]


def test_scoring_rules():
    truth = {"name": "f", "arguments": {"s": ["Bronze Age"], "x": [2.0], "n": [3, ""], "l": [[1, "a b"]],
                                        "o": [{"k": ["v"], "opt": [""]}]}}
    ok = {"name": "f", "arguments": {"s": "bronze-age", "x": 2, "l": [1, "A_B"], "o": {"k": "V"}}}
    assert call_matches(ok, truth, TOOLS)
    assert not call_matches({**ok, "name": "g"}, truth, TOOLS)
    assert not call_matches({"name": "f", "arguments": {"x": 2, "l": [1, "ab"], "o": {"k": "v"}}}, truth, TOOLS)
    assert not call_matches({"name": "f", "arguments": {**ok["arguments"], "extra": 1}}, truth, TOOLS)
    assert not call_matches({"name": "f", "arguments": {**ok["arguments"], "n": 3.5}}, truth, TOOLS)
    assert not call_matches({"name": "f", "arguments": {**ok["arguments"], "o": {"k": "v", "z": 1}}}, truth, TOOLS)
    assert not call_matches({"name": "f", "arguments": {**ok["arguments"], "l": [1]}}, truth, TOOLS)
    t2 = {"name": "f", "arguments": {"s": ["b"]}}
    assert case_correct([ok, {"name": "f", "arguments": {"s": "b"}}], [t2, truth], TOOLS, "parallel")
    assert not case_correct([ok, ok], [t2, truth], TOOLS, "parallel")
    assert not case_correct([ok, ok], [truth], TOOLS, "simple_python")


def _bench(*args):
    return subprocess.run([sys.executable, "-m", "localspec", "bench", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}, timeout=900)


def test_bench_json_contract_smollm2(smollm2):
    out = _bench(str(SUITE), "--target", str(smollm2), "--configs", "baseline,toolspec", "--limit", "3",
                 "--tool-choice", "required", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["cases"] == 3
    for name in ("baseline", "toolspec"):
        c = res["configs"][name]
        for key in ("tokens_per_second", "speedup", "mean_accepted_length", "acceptance_rate", "forced_share",
                    "identical_to_baseline", "valid_json", "ast_accuracy", "prefill_s", "latency_s"):
            assert key in c
        assert c["valid_json"] == 1.0
    assert res["configs"]["baseline"]["speedup"] == 1.0
    assert res["configs"]["toolspec"]["mean_accepted_length"] > 2.0
    assert res["configs"]["toolspec"]["forced_share"] > 0.2


def test_bench_multiturn_suite_and_table(smollm2):
    out = _bench(str(MULTI), "--target", str(smollm2), "--configs", "baseline,toolspec", "--limit", "4",
                 "--tool-choice", "required")
    assert out.returncode == 0, out.stderr
    assert "toolspec" in out.stdout and "speedup" in out.stdout


def test_bench_errors(tmp_path, smollm2):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n")
    out = _bench(str(bad), "--target", str(smollm2))
    assert out.returncode == 1 and out.stderr.strip().startswith("error:") and len(out.stderr.strip().splitlines()) == 1
    out = _bench(str(MULTI), "--target", str(smollm2), "--configs", "all")
    assert out.returncode == 1 and "need a draft model" in out.stderr
    out = _bench(str(MULTI), "--target", str(smollm2), "--configs", "fast")
    assert out.returncode == 1 and "unknown config" in out.stderr


@pytest.mark.slow  # whole benchmark runs
def test_baseline_is_target_only_even_with_a_draft(tiny_pair_paths):
    target, draft = tiny_pair_paths
    out = _bench(str(MULTI), "--target", str(target), "--draft", str(draft), "--configs", "baseline,model",
                 "--limit", "2", "--max-tokens", "96", "--tool-choice", "required", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)["configs"]
    assert res["baseline"]["mean_accepted_length"] == 1.0 and res["baseline"]["acceptance_rate"] == 0.0
    assert res["model"]["acceptance_rate"] > 0.0
    # The table says "-" for the rate of nothing drafted (the JSON keeps its 0.0).
    table = _bench(str(MULTI), "--target", str(target), "--draft", str(draft), "--configs", "baseline,model",
                   "--limit", "1", "--max-tokens", "32", "--tool-choice", "required")
    heads, *rows = table.stdout.splitlines()[1:]
    column = heads.split().index("accept")
    assert rows[0].split()[column] == "-" and rows[1].split()[column] != "-", table.stdout


@pytest.mark.slow  # whole benchmark runs
def test_configs_take_turns_and_run_as_if_alone(tiny_pair_paths, home):
    """run_bench interleaves configs case by case; each keeps its own cache state and call history, so every
    config gives the same outputs as when it runs on its own."""
    from localspec.bench.runner import CONFIGS, run_bench, run_config
    from localspec.bench.suite import load_suite
    from localspec.launch import RunFlags, open_pair, resolve_config

    config = resolve_config(RunFlags(target=str(tiny_pair_paths[0]), draft=str(tiny_pair_paths[1]), ctx_size=4096))
    pair, _ = open_pair(config)
    cases = load_suite(MULTI, 3)
    seen = []
    res = run_bench(pair, config, cases, ["baseline", "model", "all"], max_tokens=48,
                    progress=lambda name, i, n, r: seen.append((name, i)))
    assert seen == [(name, i) for i in (1, 2, 3) for name in ("baseline", "model", "all")]
    for name in ("model", "all"):
        alone = run_config(pair, config, cases, CONFIGS[name], max_tokens=48)
        assert [(o["text"], o["calls"]) for o in res["outputs"][name]] == [(r.text, r.calls) for r in alone]
    assert res["configs"]["model"]["drafted"] > 0


@pytest.mark.slow  # whole benchmark runs
def test_oracle_ceiling_drafts_baseline_answer(tiny_pair_paths):
    """benchmarks/oracle_ceiling.py: the oracle drafts baseline's own answer, so on exact (F32) weights it gives the
    same outputs and needs one verify pass per 64 tokens after the first pick."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "oracle_ceiling.py"
    out = subprocess.run([sys.executable, str(script), str(MULTI), "--target", str(tiny_pair_paths[0]), "--limit", "3",
                          "--json"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    base, oracle = res["configs"]["baseline"], res["configs"]["oracle"]
    assert res["cases"] == 3 and oracle["identical_to_baseline"] == 1.0
    assert oracle["generated_tokens"] == base["generated_tokens"] == base["target_passes"]
    assert oracle["target_passes"] <= 3 * (1 + -(-base["generated_tokens"] // 63))
    assert oracle["target_passes"] <= res["configs"]["toolspec"]["target_passes"]
    assert res["toolspec_share_of_oracle"] == round(res["configs"]["toolspec"]["tokens_per_second"]
                                                    / oracle["tokens_per_second"], 3)


@pytest.mark.parametrize("identical, noted", [
    ({"baseline": 1.0, "toolspec": 1.0}, False), ({"baseline": None, "toolspec": None}, False),
    ({"baseline": 1.0, "toolspec": 0.33}, True), ({"baseline": 1.0, "toolspec": 0.0}, True),
])
def test_a_table_with_identical_below_one_says_why(identical, noted):
    from localspec.commands.bench import identical_note

    note = identical_note({name: {"identical_to_baseline": x} for name, x in identical.items()})
    assert bool(note) == noted
    if noted:
        assert "near-tie" in note and "quantized" in note


@pytest.mark.parametrize("shares, choice, noted", [
    ([0.0, 0.0], None, True), ([0.0, 0.5], None, False), ([0.0, 0.0], "required", False),
])
def test_a_table_without_a_single_call_says_why_valid_is_zero(shares, choice, noted):
    from localspec.commands.bench import no_calls_note

    note = no_calls_note({f"c{i}": {"calls_share": x} for i, x in enumerate(shares)}, choice)
    assert bool(note) == noted and (not noted or "--tool-choice required" in note)
