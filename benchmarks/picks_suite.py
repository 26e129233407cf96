#!/usr/bin/env python3
"""Rows picked on the device over a tool-call suite: how often a grammar allows none of a row's best tokens (the
row is then computed again whole, at the cost of a single-token decode), and whether the output stays the target's.

    python benchmarks/picks_suite.py benchmarks/bfcl_subset.jsonl --target tests/.cache/smollm2-135m-instruct-f16.gguf \
        --limit 20 --k 4,8,16

Each case runs through the product's turn engine (localspec/bench/runner.py) three ways: target-only reading whole
rows (the reference), then target-only and toolspec drafting (schema, history, n-gram) on a context that keeps only
each row's k best tokens (runtime/picks.py). On a CPU the device is the CPU itself: the counts and the outputs are
what a GPU would give, the timings are not (benchmarks/overhead.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localspec.bench.runner import ConfigRun  # noqa: E402
from localspec.bench.suite import load_suite  # noqa: E402
from localspec.runtime.context import Context, ContextSettings  # noqa: E402
from localspec.runtime.model import Model  # noqa: E402
from localspec.runtime.pair import LoadedPair  # noqa: E402
from localspec.speculative import engine as engine_module  # noqa: E402
from localspec.speculative.decoder import GenParams  # noqa: E402
from localspec.speculative.drafting import DraftingConfig  # noqa: E402

TOOLSPEC = ("schema", "history", "ngram")


def count_tops(ctx: Context) -> list[int]:
    """Counts the rows read as best tokens (the engine's greedy picks on this context)."""
    seen = [0]
    orig = ctx.top

    def top(i=-1):
        got = orig(i)
        seen[0] += got is not None
        return got

    ctx.top = top
    return seen


def run(pair: LoadedPair, cases, drafters, max_tokens: int) -> list[str]:
    config = SimpleNamespace(drafting=DraftingConfig(), params=GenParams())
    pair.target_ctx.clear()
    runner = ConfigRun(pair, config, drafters, max_tokens=max_tokens, warm_up=cases[0])
    pair.target_ctx.clear()
    return [runner.run(c).output for c in cases]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", type=Path)
    p.add_argument("--target", type=Path, required=True)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--k", default="8", help="best tokens kept per row, comma-separated")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    cases = load_suite(a.suite, a.limit)
    model = Model(a.target)
    settings = dict(n_ctx=4096, n_threads=a.threads)
    whole = LoadedPair(model, Context(model, ContextSettings(**settings, device_picks="off")))
    ref = run(whole, cases, (), a.max_tokens)
    result = {"suite": a.suite.name, "target": a.target.name, "cases": len(cases), "load_avg": [os.getloadavg()[0]],
              "k": {}}
    picking = LoadedPair(model, Context(model, ContextSettings(**settings, device_picks="on")))
    tops = count_tops(picking.target_ctx)
    for k in (int(x) for x in a.k.split(",")):
        engine_module.DEVICE_CANDIDATES = k  # what the engine asks the context for when a generation starts
        r = result["k"][k] = {}
        for name, drafters in (("target_only", ()), ("toolspec", TOOLSPEC)):
            tops[0], side0 = 0, picking.target_ctx.side_decodes
            out = run(picking, cases, drafters, a.max_tokens)
            side = picking.target_ctx.side_decodes - side0
            r[name] = {"identical": sum(x == y for x, y in zip(out, ref)), "rows_read": tops[0],
                       "computed_again": side, "share": round(side / tops[0], 4) if tops[0] else 0.0}
            result["load_avg"].append(os.getloadavg()[0])
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['suite']}: {result['cases']} cases on {result['target']}; load average "
              f"{', '.join(f'{x:.1f}' for x in result['load_avg'])}")
        for k, r in result["k"].items():
            for name, v in r.items():
                print(f"k={k:2} {name:12} identical to whole rows {v['identical']}/{len(cases)}; greedy rows read as "
                      f"best tokens {v['rows_read']}, computed again whole {v['computed_again']} ({100 * v['share']:.2f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
