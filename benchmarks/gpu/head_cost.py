#!/usr/bin/env python3
"""Price a draft head's step against its target's, in steady state, through localspec's own runtime (issue 35):
the numbers the hybrid prices a head by (policy/model_price.py), measured the way a draft model's are.

    python benchmarks/gpu/head_cost.py --target T.gguf [--head H.gguf] [--threads N] [--n-gpu-layers N] [--json]
                                       [--profile profile.json --write-profile out.json]

--head names an EAGLE-3 or DFlash file (or an mtp-*.gguf); without it the target's own MTP layers are the head.
Each figure is the median of steady-state timings (runtime/timing.py: three in a row within 10%):

    target.step_s        one single-token decode of the target (what a plain step costs)
    target.pass_s[k]     a pass of k rows with every row's logits (a verify pass)
    head.step_s          one drafting decode of the head: (token, row) -> logits for MTP and EAGLE-3, the whole
                         block [id_last, mask x (block-1)] for DFlash (its one decode per draft)
    head.token_s         what one drafted token costs: step_s, or DFlash's block over the tokens it drafts
    head.feed_s[k]       catching up on k target rows (a decode of k pairs without logits; EAGLE-3: its encoder too)
    ratio                head.token_s / target.step_s: what decides whether a head pays

llama-bench cannot time a head (its context needs the target's), so the GPU kit prices heads with this script and
`--write-profile` adds a "heads" entry to a cost profile (speculative/profile.py reads it: the hybrid then prices
the head as that machine would, and projections price its decodes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from localspec.runtime.context import ContextSettings  # noqa: E402
from localspec.runtime.model import ModelSettings  # noqa: E402
from localspec.runtime.pair import load_pair  # noqa: E402
from localspec.runtime.timing import steady_median, steady_state  # noqa: E402

ROWS = (1, 2, 4, 8, 16)


def _median(step, max_steps: int) -> float:
    return steady_median(steady_state(step, max_steps=max_steps))


def measure(target: Path, head: Path | None, threads: int, n_gpu_layers: int | None, max_steps: int = 8) -> dict:
    settings = ModelSettings(n_gpu_layers=n_gpu_layers)
    pair = load_pair(target, head, target=settings, draft=settings, heads=True,
                     ctx=ContextSettings(n_ctx=1024, n_batch=64, n_threads=threads))
    try:
        if pair.head is None:
            raise SystemExit(f"error: {target.name} has no head here ({pair.head_note or 'no MTP layers'})")
        ctx, h = pair.target_ctx, pair.head
        tok = max(0, pair.target.bos)
        ctx.decode([tok] * 32, "none")  # some context, as a generation has: attention over it costs too
        base = ctx.n_past

        def target_pass(k: int):
            def once() -> float:
                t0 = time.perf_counter()
                ctx.decode([tok] * k, "all")
                spent = time.perf_counter() - t0
                ctx.truncate(base)
                return spent
            return once

        passes = {k: _median(target_pass(k), max_steps) for k in ROWS}
        info, hc = h.info, h.ctx
        width = h.tap.width
        rows = np.asarray(h.tap.rows(0, base)).copy()
        hc.clear()
        feeds = {}
        for k in ROWS:
            def feed(k=k) -> float:
                t0 = time.perf_counter()
                if info.kind == "eagle3":
                    hc.run(None, rows[:k], 0, True, encode=True)
                    hc.run([tok] * k, np.zeros((k, info.n_embd), np.float32), 0)
                elif info.kind == "mtp":
                    hc.run([tok] * k, rows[:k], 0)
                else:
                    hc.run(None, rows[:k], 0)
                spent = time.perf_counter() - t0
                hc.clear()
                return spent
            feeds[k] = _median(feed, max_steps)
        from localspec.runtime.heads import warm_up

        step = warm_up(h, max_steps=max_steps)  # the head's own drafting step, as the pair prices it at load
        drafted = max(1, min(info.block_size - 1, 15)) if info.kind in ("dflash", "dspark") else 1
        arch = pair.target.meta("general.architecture")
        return {
            "target": {"file": str(target), "layers": int(pair.target.meta(f"{arch}.block_count") or 0),
                       "step_s": passes[1], "pass_s": {str(k): v for k, v in passes.items()}},
            "head": {**h.summary(), "width": width, "step_s": step, "token_s": step / drafted,
                     "feed_s": {str(k): v for k, v in feeds.items()}},
            "ratio": round(step / drafted / passes[1], 4),
            "threads": threads,
        }
    finally:
        pair.close()


def profile_entry(m: dict) -> dict:
    """The cost profile's "heads" entry for this head: its price per drafted token, and its decodes by rows (feeds,
    and the drafting step at the rows it has)."""
    head = m["head"]
    pass_s = dict(head["feed_s"])
    rows = str(head["block_size"]) if head.get("block_size") else "1"
    pass_s[rows] = max(pass_s.get(rows, 0.0), head["step_s"])
    return {"step_s": head["step_s"], "token_s": head["token_s"], "pass_s": pass_s, "kind": head["kind"],
            "measured_on": "localspec's runtime (benchmarks/gpu/head_cost.py)"}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", type=Path, required=True)
    p.add_argument("--head", type=Path, default=None, help="an EAGLE-3/DFlash file, or an mtp-*.gguf")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--n-gpu-layers", type=int, default=None)
    p.add_argument("--steps", type=int, default=8, help="most timed decodes per figure")
    p.add_argument("--json", action="store_true")
    p.add_argument("--profile", type=Path, help="a cost profile to add this head to (with --write-profile)")
    p.add_argument("--write-profile", type=Path, help="where to write the profile with the head added")
    args = p.parse_args(argv)
    from localspec.runtime.context import default_threads

    m = measure(args.target, args.head, args.threads or default_threads(), args.n_gpu_layers, args.steps)
    if args.write_profile:
        prof = json.loads(args.profile.read_text()) if args.profile else {}
        origin = {"dspark": "dflash"}.get(m["head"]["kind"], m["head"]["kind"])
        prof.setdefault("heads", {})[origin] = profile_entry(m)
        args.write_profile.write_text(json.dumps(prof, indent=2) + "\n")
    if args.json:
        print(json.dumps(m, indent=2))
    else:
        t, h = m["target"], m["head"]
        print(f"target {Path(t['file']).name} ({t['layers']} layers): step {1000 * t['step_s']:.2f} ms; "
              f"passes " + ", ".join(f"{k}: {1000 * v:.1f}" for k, v in t["pass_s"].items()) + " ms")
        print(f"head {h['kind']}: step {1000 * h['step_s']:.2f} ms, {1000 * h['token_s']:.2f} ms a drafted token "
              f"({100 * m['ratio']:.1f}% of a target step); feeds " +
              ", ".join(f"{k}: {1000 * v:.2f}" for k, v in h["feed_s"].items()) + " ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
