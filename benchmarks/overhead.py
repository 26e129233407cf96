#!/usr/bin/env python3
"""What localspec spends outside llama.cpp's forward passes, against llama-bench on the same file (issue 25).

    python benchmarks/overhead.py --target tests/.cache/gemma-3-270m-f16.gguf --llama-bench /tmp/lbench/bin/llama-bench
    python benchmarks/overhead.py --target ... --picks host,device   # both ways of picking the target's token

Four measurements, each repeated and reported as medians, with the load average beside them (shared machine):

- target-only decoding (SpecEngine without a drafter, greedy): per token, the time outside `llama_decode` (wall and
  this thread's CPU), and tokens per second against llama-bench's `tg` at the same depth and thread count;
- verify passes of k rows: an oracle drafter proposes the target's own continuation, so every pass decodes k tokens
  with k logits rows and all of them are judged (the most host work a pass can have); per pass the forward pass
  (inside `llama_decode`), the host-side judging around it, and the whole pass against llama-bench's `pp k`
  (k tokens, ONE logits row: what a verify pass would cost if rows were free);
- the logits rows themselves: one decode of k tokens with k rows against the same with one row (the difference is
  k-1 rows: the output layer's compute, which no way of picking avoids, plus getting each row to the host), and the
  host's share measured alone (copying one row, scanning it for its argmax);
- with `--picks host,device` every measurement runs both ways the target's token can be picked: the host reads and
  scans whole logits rows, or llama.cpp's backend sampler keeps each row's few best candidates where the output
  layer ran (runtime/context.py: Context.pick_on_device).

With --threads 1 the forward pass runs on the calling thread, so its CPU time is this thread's: the CPU figures are
then what a quiet machine would show. Wall figures carry the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from localspec.runtime.context import Context, ContextSettings  # noqa: E402
from localspec.runtime.llama import lib  # noqa: E402
from localspec.runtime.model import Model  # noqa: E402
from localspec.speculative.decoder import GenParams, SpecEngine  # noqa: E402
from localspec.speculative.draft import Draft, Drafter, DraftRequest  # noqa: E402

PROMPTS = [
    "Explain how a hash table works.",
    "Write a Python function that checks whether a string is a palindrome.",
    "Describe the difference between TCP and UDP.",
]


class DecodeClock:
    """Wall and thread-CPU seconds inside llama_decode (everything else in a generation is localspec's own)."""

    def __init__(self):
        self.wall = 0.0
        self.cpu = 0.0
        orig, pc, tt = lib.llama_decode, time.perf_counter, time.thread_time

        def llama_decode(ctx, batch):
            c0, t0 = tt(), pc()
            rc = orig(ctx, batch)
            self.wall += pc() - t0
            self.cpu += tt() - c0
            return rc

        lib.llama_decode = llama_decode  # Context.decode looks it up on the module at call time

    def mark(self) -> tuple[float, float]:
        return self.wall, self.cpu


class Oracle(Drafter):
    """Proposes the target's own greedy continuation, `n` tokens at a time: every pass is k = n + 1 rows, all kept."""

    name = "ngram"

    def __init__(self, sequence: list[int], n: int):
        self.sequence, self.n = sequence, n

    def propose(self, req: DraftRequest) -> Draft:
        d = Draft()
        h = len(req.history)
        for t in self.sequence[h:h + min(self.n, req.max_len)]:
            d.add(t, self.name)
        return d


def med(xs) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def open_context(model: Model, how: str, threads: int) -> Context:
    """A target context reading whole rows (host) or picking each row's best tokens on the device (device)."""
    settings = ContextSettings(n_ctx=2048, n_batch=64, n_threads=threads)
    if how == "device":
        settings = ContextSettings(n_ctx=2048, n_batch=64, n_threads=threads, device_picks="on")
    elif how == "host" and hasattr(settings, "device_picks"):
        settings = ContextSettings(n_ctx=2048, n_batch=64, n_threads=threads, device_picks="off")
    return Context(model, settings)


# -- target-only ---------------------------------------------------------------------------------------------------
def target_only(ctx: Context, clock: DecodeClock, prompts, n_tokens: int, reps: int) -> dict:
    engine = SpecEngine(ctx, None)
    engine.generate(prompts[0], GenParams(max_tokens=8))  # warm-up (and the cost model's calibration)
    per = []
    for _ in range(reps):
        for toks in prompts:
            w0, c0 = clock.mark()
            cpu0 = time.thread_time()
            gen = engine.generate(toks, GenParams(max_tokens=n_tokens))
            cpu = time.thread_time() - cpu0
            w1, c1 = clock.mark()
            s = gen.stats
            steps = s.target_passes - 1  # the first token comes from the prompt's pass
            # The prompt's decode is inside prefill_s; the loop's decodes are the rest.
            loop_decode = (w1 - w0) - _prefill_decode(s)
            loop_cpu = cpu - _last_prefill_decode[1]  # this thread's CPU after the prompt's decode
            per.append({
                "tokens": s.generated_tokens, "steps": steps, "gen_s": s.generation_s,
                "tok_s": steps / s.generation_s if s.generation_s > 0 else 0.0,
                "outside_ms": 1e3 * (s.generation_s - loop_decode) / max(steps, 1),
                "outside_cpu_ms": 1e3 * (cpu - (c1 - c0)) / max(steps, 1),
                "decode_ms": 1e3 * loop_decode / max(steps, 1),
                "decode_cpu_ms": 1e3 * ((c1 - c0) - _last_prefill_decode[1]) / max(steps, 1),
                "step_cpu_ms": 1e3 * loop_cpu / max(steps, 1),
            })
    return {"runs": len(per), "tokens": per[0]["tokens"],
            **{k: med(r[k] for r in per) for k in ("tok_s", "outside_ms", "outside_cpu_ms", "decode_ms",
                                                    "decode_cpu_ms", "step_cpu_ms")}}


_last_prefill_decode = [0.0, 0.0]  # wall, CPU of the latest prompt's decode (with its prefill's Python)


def _prefill_decode(stats) -> float:
    return _last_prefill_decode[0]


def instrument_prefill(ctx: Context, clock: DecodeClock) -> None:
    """Remember how long the prompt's own decode took, to keep it out of the loop's figures."""
    orig = ctx.prefill

    def prefill(tokens, **kw):
        w0, c0 = clock.wall, time.thread_time()
        try:
            return orig(tokens, **kw)
        finally:
            _last_prefill_decode[0] = clock.wall - w0
            _last_prefill_decode[1] = time.thread_time() - c0

    ctx.prefill = prefill


# -- verify passes of k rows ---------------------------------------------------------------------------------------
def verify_passes(ctx: Context, clock: DecodeClock, prompts, rows: list[int], n_tokens: int, reps: int) -> dict:
    base = SpecEngine(ctx, None)
    refs = [p + base.generate(p, GenParams(max_tokens=n_tokens)).tokens for p in prompts]
    out = {}
    for k in rows:
        passes = []
        for _ in range(reps):
            for p, ref in zip(prompts, refs):
                engine = SpecEngine(ctx, Oracle(ref, k - 1), cost_model=base.costs)
                verify = engine._verify

                def timed(last, draft, *a, _v=verify, **kw):
                    w0, c0 = clock.mark()
                    cpu0, t0 = time.thread_time(), time.perf_counter()
                    res = _v(last, draft, *a, **kw)
                    t1, cpu1 = time.perf_counter(), time.thread_time()
                    w1, c1 = clock.mark()
                    if len(draft) == k - 1:
                        passes.append({"pass_ms": 1e3 * (t1 - t0), "decode_ms": 1e3 * (w1 - w0),
                                       "judge_ms": 1e3 * ((t1 - t0) - (w1 - w0)),
                                       "pass_cpu_ms": 1e3 * (cpu1 - cpu0), "decode_cpu_ms": 1e3 * (c1 - c0),
                                       "judge_cpu_ms": 1e3 * ((cpu1 - cpu0) - (c1 - c0))})
                    return res

                engine._verify = timed
                gen = engine.generate(p, GenParams(max_tokens=n_tokens))
                assert gen.tokens == ref[len(p):len(p) + len(gen.tokens)], "oracle run left the target's output"
        out[k] = {"passes": len(passes), **{key: med(x[key] for x in passes) for key in
                                            ("pass_ms", "decode_ms", "judge_ms", "pass_cpu_ms", "decode_cpu_ms",
                                             "judge_cpu_ms")}}
    return out


# -- logits rows -----------------------------------------------------------------------------------------------------
def row_costs(ctx: Context, prompt: list[int], rows: list[int], reps: int) -> dict:
    """Thread CPU (and wall) of one decode of k tokens with all k rows against one row, on top of `prompt`."""
    ctx.prefill(prompt)
    base = ctx.n_past
    filler = prompt[-8:] * 8
    out = {}
    for k in rows:
        if k < 2:
            continue
        got = {"all": [], "one": []}
        for _ in range(reps):
            for which in ("all", "one"):
                flags = [True] * k if which == "all" else [False] * (k - 1) + [True]
                c0, t0 = time.thread_time(), time.perf_counter()
                ctx.decode(filler[:k], flags)
                got[which].append((time.thread_time() - c0, time.perf_counter() - t0))
                ctx.truncate(base)
        extra_cpu = med(c for c, _ in got["all"]) - med(c for c, _ in got["one"])
        extra_wall = med(w for _, w in got["all"]) - med(w for _, w in got["one"])
        out[k] = {"decode_all_rows_cpu_ms": 1e3 * med(c for c, _ in got["all"]),
                  "decode_one_row_cpu_ms": 1e3 * med(c for c, _ in got["one"]),
                  "per_row_cpu_ms": 1e3 * extra_cpu / (k - 1), "per_row_wall_ms": 1e3 * extra_wall / (k - 1)}
    return out


def host_row_share(n_vocab: int, reps: int = 200) -> dict:
    """What a row costs the host alone: llama.cpp copying it into its output buffer (a memcpy of n_vocab floats,
    timed here as numpy's copy between two such buffers) and scanning it for its argmax."""
    rng = np.random.default_rng(0)
    src = rng.standard_normal(n_vocab * 16, dtype=np.float32)
    dst = np.empty_like(src)
    copy, scan = [], []
    for i in range(reps):
        row = slice((i % 16) * n_vocab, (i % 16 + 1) * n_vocab)
        t0 = time.perf_counter()
        np.copyto(dst[row], src[row])
        t1 = time.perf_counter()
        int(np.argmax(dst[row]))
        scan.append(time.perf_counter() - t1)
        copy.append(t1 - t0)
    return {"copy_ms": 1e3 * med(copy), "argmax_ms": 1e3 * med(scan)}


# -- llama-bench ------------------------------------------------------------------------------------------------------
def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _llama_bench_once(binary: str, target: Path, threads: int, test: list[str], reps: int) -> tuple[dict, float]:
    """One llama-bench run of one test: its JSONL record and the process's CPU seconds (user + system)."""
    cmd = [binary, "-m", str(target), "-t", str(threads), "-r", str(reps), "-ngl", "0", "-o", "jsonl", *test]
    cpu0 = _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        sys.exit(f"error: llama-bench failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("{"))), cpu


def llama_bench_test(binary: str, target: Path, threads: int, test: list[str], reps: int) -> dict:
    """llama-bench's time for one test (`-p k -n 0`: one pass of k tokens with ONE logits row; `-p 0 -n N`: N
    single-token steps): the median wall of its repetitions, and its CPU per repetition, taken as the difference
    between a run of `reps` and a run of 2 repetitions (loading and the warm-up run cancel out; with 1 thread the
    forward passes run on llama-bench's own thread, so the CPU is what a quiet machine would take)."""
    _, cpu_lo = _llama_bench_once(binary, target, threads, test, 2)
    rec, cpu_hi = _llama_bench_once(binary, target, threads, test, reps)
    return {"wall_s": med(rec["samples_ns"]) / 1e9, "cpu_s": (cpu_hi - cpu_lo) / (reps - 2)}


def llama_bench(binary: str, target: Path, threads: int, rows: list[int], n_tokens: int, reps: int) -> dict:
    out = {"binary": binary, "threads": threads, "reps": reps, "pp": {}}
    tg = llama_bench_test(binary, target, threads, ["-p", "0", "-n", str(n_tokens)], reps)
    out["tg_tok_s"] = n_tokens / tg["wall_s"]
    out["tg_cpu_ms_per_token"] = 1e3 * tg["cpu_s"] / n_tokens
    for k in rows:
        pp = llama_bench_test(binary, target, threads, ["-p", str(k), "-n", "0"], reps)
        out["pp"][k] = {"ms": 1e3 * pp["wall_s"], "cpu_ms": 1e3 * pp["cpu_s"]}
    return out


# -- main -------------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", type=Path, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tokens", type=int, default=48, help="tokens per generation")
    p.add_argument("--rows", default="1,2,4,8,16", help="verify pass sizes k (tokens = logits rows)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--picks", default="host", help="host, device, or both comma-separated (alternated)")
    p.add_argument("--llama-bench", metavar="BIN", help="llama-bench built from the same llama.cpp (tg and pp k)")
    p.add_argument("--skip", default="", help="comma-separated sections to skip: target_only,verify,rows")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    rows = [int(x) for x in a.rows.split(",")]
    picks = a.picks.split(",")
    skip = set(a.skip.split(",")) - {""}
    load = [os.getloadavg()[0]]
    clock = DecodeClock()
    model = Model(a.target)
    contexts = {how: open_context(model, how, a.threads) for how in picks}
    for ctx in contexts.values():
        instrument_prefill(ctx, clock)
    prompts = [model.tokenize(t) for t in PROMPTS]
    result = {"target": a.target.name, "n_vocab": model.n_vocab, "threads": a.threads, "tokens": a.tokens,
              "reps": a.reps, "prompt_tokens": [len(t) for t in prompts], "picks": {}}
    for how in picks:
        ctx = contexts[how]
        r = result["picks"][how] = {}
        if "target_only" not in skip:
            r["target_only"] = target_only(ctx, clock, prompts, a.tokens, a.reps)
            load.append(os.getloadavg()[0])
        if "verify" not in skip:
            r["verify"] = verify_passes(ctx, clock, prompts, rows, a.tokens, a.reps)
            load.append(os.getloadavg()[0])
        if "rows" not in skip:
            r["rows"] = row_costs(ctx, prompts[0], rows, 4 * a.reps)
            load.append(os.getloadavg()[0])
    result["host_row"] = host_row_share(model.n_vocab)
    for ctx in contexts.values():
        if hasattr(ctx, "side_decodes"):
            result["picks"][[h for h, c in contexts.items() if c is ctx][0]]["side_decodes"] = ctx.side_decodes
        ctx.close()
    model.close()
    if a.llama_bench:
        lb = result["llama_bench"] = llama_bench(a.llama_bench, a.target, a.threads, rows, a.tokens,
                                                 max(6, 2 * a.reps))
        load.append(os.getloadavg()[0])
        for how, r in result["picks"].items():
            if "target_only" in r:
                t = r["target_only"]
                t["vs_llama_bench_tg"] = t["tok_s"] / lb["tg_tok_s"]
                t["cpu_vs_llama_bench_tg"] = lb["tg_cpu_ms_per_token"] / t["step_cpu_ms"]
            for k, v in r.get("verify", {}).items():
                if k in lb["pp"]:
                    v["llama_bench_pp"] = lb["pp"][k]
                    v["vs_llama_bench_pp"] = v["pass_ms"] / lb["pp"][k]["ms"]
                    v["cpu_vs_llama_bench_pp"] = v["pass_cpu_ms"] / lb["pp"][k]["cpu_ms"]
    result["load_avg"] = load
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


def report(r: dict) -> None:
    print(f"{r['target']} (vocabulary {r['n_vocab']}), {r['threads']} thread(s), {r['tokens']} tokens per generation,"
          f" {r['reps']} reps, prompts of {r['prompt_tokens']} tokens; medians")
    print(f"load average (1 min) at each stage: {', '.join(f'{x:.1f}' for x in r['load_avg'])}")
    lb = r.get("llama_bench")
    if lb:
        print(f"llama-bench: tg{r['tokens']} {lb['tg_tok_s']:.1f} tok/s wall, {lb['tg_cpu_ms_per_token']:.2f} ms CPU "
              f"per token; pp k (one row): " + ", ".join(f"{k}: {v['ms']:.2f} ms wall {v['cpu_ms']:.2f} CPU"
                                                         for k, v in lb["pp"].items()))
    for how, m in r["picks"].items():
        print(f"-- picks on the {how}" + (f" (rows computed again: {m['side_decodes']})" if "side_decodes" in m else ""))
        t = m.get("target_only")
        if t:
            vs = (f"; vs llama-bench tg: {t['vs_llama_bench_tg']:.3f} wall, {t['cpu_vs_llama_bench_tg']:.3f} CPU"
                  if "vs_llama_bench_tg" in t else "")
            print(f"target-only: {t['tok_s']:.1f} tok/s, {t['step_cpu_ms']:.2f} ms CPU per token (decode "
                  f"{t['decode_cpu_ms']:.2f}); outside llama_decode per token {t['outside_ms']:.3f} ms wall, "
                  f"{t['outside_cpu_ms']:.3f} ms CPU{vs}")
        for k, v in m.get("verify", {}).items():
            vs = (f"; vs llama-bench pp{k}: {v['vs_llama_bench_pp']:.2f}x wall, {v['cpu_vs_llama_bench_pp']:.2f}x CPU"
                  if "vs_llama_bench_pp" in v else "")
            print(f"verify k={k:2}: pass {v['pass_ms']:.2f} ms wall, {v['pass_cpu_ms']:.2f} CPU = decode "
                  f"{v['decode_cpu_ms']:.2f} + judging {v['judge_cpu_ms']:.3f} ms CPU ({v['judge_ms']:.3f} wall), "
                  f"{v['passes']} passes{vs}")
        for k, v in m.get("rows", {}).items():
            print(f"rows k={k:2}: decode CPU {v['decode_all_rows_cpu_ms']:.2f} ms with {k} rows, "
                  f"{v['decode_one_row_cpu_ms']:.2f} with 1 -> {v['per_row_cpu_ms']:.3f} ms CPU per extra row "
                  f"({v['per_row_wall_ms']:.3f} wall)")
    h = r["host_row"]
    print(f"host share of a row: copy {h['copy_ms']:.3f} ms, argmax scan {h['argmax_ms']:.3f} ms")


if __name__ == "__main__":
    raise SystemExit(main())
