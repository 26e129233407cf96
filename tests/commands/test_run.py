"""`localspec run` as a user runs it: a subprocess, real llama.cpp, the tiny generated GGUF pair.

The tiny models never emit EOS, so every run caps --max-tokens. Each run is a fresh process (~0.3 s).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_helpers import run_localspec

N = 24  # tokens per generation: enough for several draft/verify steps


def run_json(*args) -> dict:
    proc = run_localspec("run", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def pair_args(tiny_pair_paths):
    target, draft = tiny_pair_paths
    # The draft model alone (the engine's own loop): with every drafter (the default) the hybrid policy would
    # judge a draft 0.8x the target's size too costly to pay on a CPU and hardly call it.
    return ["--target", target, "--draft", draft, "--drafters", "model", "--max-tokens", N]


@pytest.fixture(scope="module")
def spec_json(pair_args) -> dict:
    return run_json("hello world", *pair_args)


@pytest.fixture(scope="module")
def plain_json(tiny_pair_paths) -> dict:
    return run_json("hello world", "--target", tiny_pair_paths[0], "--no-draft", "--max-tokens", N)


# -- --json ------------------------------------------------------------------------------------------------------
@pytest.mark.slow  # the CLI generating in subprocesses (the fast tier runs `run` in process: tests/launch)
def test_json_has_text_and_stats(spec_json):
    s = spec_json["stats"]
    assert isinstance(spec_json["text"], str) and spec_json["text"]
    for key in ("generated_tokens", "target_passes", "drafted", "accepted", "acceptance_rate",
                "mean_accepted_length", "tokens_per_second", "wall_s"):
        assert key in s, key
    assert s["generated_tokens"] == N and s["finish_reason"] == "length"
    assert 0 < s["accepted"] <= s["drafted"]
    assert s["acceptance_rate"] == pytest.approx(s["accepted"] / s["drafted"], abs=1e-4)
    assert s["mean_accepted_length"] == pytest.approx(s["generated_tokens"] / s["target_passes"], abs=1e-4)
    assert s["target_passes"] < N  # accepted drafts saved target passes
    assert s["tokens_per_second"] > 0 and s["wall_s"] > 0


@pytest.mark.slow  # the CLI in subprocesses
def test_no_draft_drafts_nothing(plain_json):
    s = plain_json["stats"]
    assert s["drafted"] == 0 and s["accepted"] == 0
    assert s["generated_tokens"] == N == s["target_passes"]  # one target pass per token
    assert s["mean_accepted_length"] == 1.0


@pytest.mark.slow  # the CLI generating in subprocesses (the fast tier runs `run` in process: tests/launch)
def test_greedy_speculative_text_equals_target_only(spec_json, plain_json):
    # F32 target: batched verification gives the same argmax as one-token decoding, so greedy output is exact.
    assert spec_json["text"] == plain_json["text"]


@pytest.mark.slow  # the CLI in subprocesses
def test_raw_skips_chat_template(tiny_pair_paths):
    args = ("--target", tiny_pair_paths[0], "--no-draft", "--max-tokens", 2)
    chat, raw = run_json("hello", *args), run_json("hello", *args, "--raw")
    # ChatML wraps the prompt in <|im_start|>user ... <|im_end|> <|im_start|>assistant: more prompt tokens.
    assert chat["stats"]["prompt_tokens"] > raw["stats"]["prompt_tokens"] + 4
    assert chat["text"] != raw["text"]


@pytest.mark.slow  # the CLI in subprocesses
def test_a_plain_run_saves_its_pair_with_the_draft(spec_json, tiny_pair_paths):
    # `localspec sessions` and F4 name the pair as run --tools and the app do: "target + draft", not the target alone
    proc = run_localspec("sessions", "show", spec_json["conversation"], "--json")
    assert proc.returncode == 0, proc.stderr
    target, draft = (Path(p).name for p in tiny_pair_paths)
    assert json.loads(proc.stdout)["pair"] == f"{target} + {draft}"


# -- streaming mode ----------------------------------------------------------------------------------------------
@pytest.mark.slow  # the CLI in subprocesses
def test_streaming_prints_text_and_one_line_summary(pair_args, spec_json):
    proc = run_localspec("run", "hello world", *pair_args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == spec_json["text"] + "\n"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{N} tokens" in lines[0] and "tok/s" in lines[0] and "accepted" in lines[0]


# -- sampling ----------------------------------------------------------------------------------------------------
@pytest.mark.slow  # the CLI in subprocesses
def test_temperature_with_seed_is_reproducible(pair_args):
    hot = ("--temperature", 2.0, "--top-k", 0, "--top-p", 1, "--min-p", 0)
    runs = {seed: [run_json("hello", *pair_args, *hot, "--seed", seed) for _ in range(2 if seed == 1 else 1)]
            for seed in (1, 2, 3)}
    a, b = runs[1]
    assert a["text"] == b["text"]
    assert (a["stats"]["drafted"], a["stats"]["accepted"]) == (b["stats"]["drafted"], b["stats"]["accepted"])
    texts = {r[0]["text"] for r in runs.values()}
    assert len(texts) > 1  # the seed matters: flat sampling over 24 tokens does not repeat across 3 seeds


# -- errors: one line, exit code 1, no traceback ------------------------------------------------------------------
def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert proc.stdout == ""


@pytest.fixture(scope="module")
def bad_files(tiny_pair_paths, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    data = tiny_pair_paths[0].read_bytes()
    (d / "notes.gguf").write_text("definitely not a model\n")
    (d / "truncated.gguf").write_bytes(data[: len(data) // 2])
    return {"missing": d / "missing.gguf", "not_gguf": d / "notes.gguf", "truncated": d / "truncated.gguf"}


@pytest.mark.slow  # the CLI in subprocesses
@pytest.mark.parametrize("kind", ["missing", "not_gguf", "truncated"])
@pytest.mark.parametrize("role", ["target", "draft"])
def test_bad_model_file(kind, role, bad_files, tiny_pair_paths):
    bad = bad_files[kind]
    paths = {"target": tiny_pair_paths[0], "draft": tiny_pair_paths[1], role: bad}
    proc = run_localspec("run", "hi", "--target", paths["target"], "--draft", paths["draft"], "--max-tokens", 2)
    assert_one_line_error(proc, bad.name)


@pytest.mark.slow  # the CLI in subprocesses
def test_a_draft_of_another_family_runs_translated(tiny_pair_paths, tiny_other_vocab):
    proc = run_localspec("run", "hi", "--target", tiny_pair_paths[0], "--draft", tiny_other_vocab, "--max-tokens", 8,
                         "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stats"]["draft_translated"] is True
    proc = run_localspec("run", "hi", "--target", tiny_pair_paths[0], "--draft", tiny_other_vocab, "--max-tokens", 8)
    assert proc.returncode == 0 and "draft model translated (another tokenizer)" in proc.stderr


@pytest.mark.slow  # the CLI in subprocesses
def test_draft_and_no_draft_contradict(tiny_pair_paths):
    target, draft = tiny_pair_paths
    proc = run_localspec("run", "hi", "--target", target, "--draft", draft, "--no-draft", "--max-tokens", 2)
    assert_one_line_error(proc, "--no-draft")


@pytest.mark.parametrize("flag,value", [
    ("--max-tokens", "0"),
    ("--max-tokens", "abc"),
    ("--draft-max", "-1"),
    ("--draft-p-min", "1.5"),
    ("--draft-p-min", "nan"),
    ("--temperature", "-1"),
    ("--temperature", "nan"),
    ("--top-p", "2"),
    ("--top-k", "-5"),
    ("--min-p", "2"),
    ("--seed", "-1"),
    ("--threads", "-3"),
    ("--ctx-size", "-5"),
])
@pytest.mark.slow  # the CLI in subprocesses
def test_bad_numbers(flag, value, tiny_pair_paths):
    proc = run_localspec("run", "hello world", "--target", tiny_pair_paths[0], "--no-draft", "--max-tokens", 2,
                         "--temperature", 1, flag, value)
    assert_one_line_error(proc, flag)


@pytest.mark.slow  # the CLI in subprocesses
def test_tiny_context_never_aborts(tiny_pair_paths):
    # A context smaller than the prompt and than n_batch: llama.cpp clamps n_batch to it; either the run works
    # (the cache is padded) or it is a one-line error, but never a GGML_ASSERT abort.
    proc = run_localspec("run", "hello world, a prompt longer than eight tokens", "--target", tiny_pair_paths[0],
                         "--draft", tiny_pair_paths[1], "--max-tokens", 4, "--ctx-size", 8)
    if proc.returncode != 0:
        assert_one_line_error(proc)
    else:
        assert proc.stdout.strip()


def test_greedy_output_on_f16_is_the_target_alones_up_to_near_ties(smollm2_f16, smollm2):
    """The README's claim, on the engine `localspec run` builds (launch/open.py, its default drafting with the Q4_1
    copy as draft model, which really drafts here): greedy replies are the target alone's token for token; where
    one is not, it parts at a near-tie (its two tokens within the hundredths an F16 batch moves a logit:
    benchmarks/batch_rows.py)."""
    from localspec.commands.run import prompt_tokens
    from localspec.launch.flags import RunFlags
    from localspec.launch.open import open_engine
    from localspec.launch.run_config import resolve_config
    from localspec.runtime.context import Context, ContextSettings
    from localspec.speculative import GenParams

    prompts = ["Count from 1 to 10.", "Name three animals.", "Write two sentences about the sea.",
               "Write a Python function that adds two numbers."]
    spec = open_engine(resolve_config(RunFlags(target=str(smollm2_f16), draft=str(smollm2), drafters="model",
                                               threads=1)))
    alone = open_engine(resolve_config(RunFlags(target=str(smollm2_f16), no_draft=True, threads=1)))
    fresh = Context(alone.pair.target, ContextSettings(n_ctx=2048, n_threads=1))
    try:
        same = drafted = 0
        for text in prompts:
            prompt = prompt_tokens(spec.pair.target, [{"role": "user", "content": text}])
            want = alone.engine.generate(prompt, GenParams(max_tokens=48)).tokens
            got = spec.engine.generate(prompt, GenParams(max_tokens=48))
            drafted += got.stats.accepted
            if got.tokens == want:
                same += 1
                continue
            i = next(k for k, (a, b) in enumerate(zip(want, got.tokens)) if a != b)
            fresh.clear()
            fresh.prefill(prompt + want[:i])
            row = fresh.logits(-1)
            assert abs(row[want[i]] - row[got.tokens[i]]) < 0.1, f"{text!r} parts at {i}, and not at a near-tie"
        assert drafted > 48 and same >= len(prompts) - 1, (same, drafted)
    finally:
        spec.close()
        alone.close()
