#!/usr/bin/env python3
"""What localspec's own passes cost on this machine, against llama-bench's figures for the same files (a profile).

    python benchmarks/gpu/verify_cost.py --target T.gguf [--draft D.gguf] [--profile PROFILE.json] [--json]

For each row count k: a pass of k rows through localspec's runtime (Context.decode, in steady state: every shape
once untimed, then the median of --reps) with logits for the last row only (what llama-bench's `pp k` does) and for
every row (what verification asks); against the profile's `pp k` (and `pp k -embd 1` where it was recorded). Then
the draft model's price as localspec takes it at load (runtime/pair.py warm_up) against llama-bench's `tg` step,
and the cost model's curve after its calibration (what the drafting policy prices passes with).
Issue 25's bars: a verify pass within 15% of `pp k`, the draft model priced within 20% of its llama-bench step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from localspec.errors import LocalspecError  # noqa: E402
from localspec.runtime.context import Context, ContextSettings  # noqa: E402
from localspec.runtime.model import Model, ModelSettings  # noqa: E402
from localspec.runtime.pair import warm_up  # noqa: E402
from localspec.speculative.costs import CostModel  # noqa: E402
from localspec.speculative.profile import CostProfile  # noqa: E402

DEPTH = 64  # tokens in the cache under every timed pass (a short prompt)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def passes(ctx: Context, rows: list[int], reps: int) -> dict[int, dict[str, float]]:
    tok = ctx.model.bos if ctx.model.bos >= 0 else 0
    ctx.decode([tok] * DEPTH, "none")
    out = {}
    for k in rows:
        timed = {}
        for mode in ("last", "all"):
            ctx.decode([tok] * k, mode)  # untimed: the shape's first call allocates
            ctx.truncate(DEPTH)
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                ctx.decode([tok] * k, mode)
                times.append(time.perf_counter() - t0)
                ctx.truncate(DEPTH)
            timed[mode] = _median(times)
        out[k] = timed
    ctx.clear()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft")
    ap.add_argument("--profile", help="cost profile of this machine (benchmarks/gpu/profile.py)")
    ap.add_argument("--rows", default="1,2,4,8,16,32,64")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--n-gpu-layers", type=int, default=None, help="default: all where the build can offload")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        rows = [int(x) for x in a.rows.split(",")]
        profile = CostProfile.load(a.profile) if a.profile else None
        settings = ModelSettings(n_gpu_layers=a.n_gpu_layers)
        cs = ContextSettings(n_ctx=1024, n_batch=max(rows + [DEPTH]), n_threads=a.threads)
        model = Model(a.target, settings)
        ctx = Context(model, cs)
        measured = passes(ctx, rows, a.reps)
        ctx.decode([model.bos if model.bos >= 0 else 0] * DEPTH, "last")
        cm = CostModel()
        cm.calibrate(ctx)
        out = {"target": {"file": Path(a.target).name, "placement": model.placement["layers"], "passes": {}},
               "cost_model_curve": {str(k): round(v, 6) for k, v in cm.pass_curve()},
               "cost_model_single_s": round(cm.single_token_s(), 6)}
        for k, m in measured.items():
            row = {"localspec_last_s": round(m["last"], 6), "localspec_all_s": round(m["all"], 6)}
            if profile is not None:
                pp = profile.pass_s(k, 1)
                row["llama_bench_pp_s"] = round(pp, 6)
                row["ratio_last"] = round(m["last"] / pp, 3)
                if profile.target.logits_row_s:
                    row["llama_bench_pp_all_s"] = round(profile.pass_s(k, k), 6)
                    row["ratio_all"] = round(m["all"] / profile.pass_s(k, k), 3)
            out["target"]["passes"][str(k)] = row
        ctx.close()
        if a.draft:
            dmodel = Model(a.draft, settings)
            dctx = Context(dmodel, cs)
            price = warm_up(dctx)
            out["draft"] = {"file": Path(a.draft).name, "placement": dmodel.placement["layers"],
                            "warm_up_step_s": round(price, 6)}
            if profile is not None and profile.draft is not None:
                out["draft"]["llama_bench_step_s"] = round(profile.draft_step_s(), 6)
                out["draft"]["ratio"] = round(price / profile.draft_step_s(), 3)
    except LocalspecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"target {out['target']['file']} ({out['target']['placement']}): pass of k rows, seconds")
    for k, r in out["target"]["passes"].items():
        extra = "".join(f"  {key} {val}" for key, val in r.items() if not key.startswith("localspec"))
        print(f"  k={k:>3}: last row {r['localspec_last_s']:.5f}  all rows {r['localspec_all_s']:.5f}{extra}")
    if "draft" in out:
        print(f"draft {out['draft']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
