#!/usr/bin/env python3
"""Projected speedup of each draft head under a cost profile (default: the H200 one) at the acceptance rates the
heads' makers publish (issue 35, benchmarks/README.md).

    python benchmarks/heads_projection.py [--profile benchmarks/gpu/h200-8b-q4_0+0.5b-q8_0.json] [--json]

What is measured and what is assumed, per figure:
- the target's verify pass of k rows: MEASURED, the profile's curve (llama-bench on the H200, an 8B Q4_0 target);
- a head's drafting step as a share of a target step: ASSUMED, three ways, each printed:
    bytes    the share of weights one head step reads against one target step (from the published shapes, as
             mkheads.py writes them): what it costs where a step is bound by memory, as an 8B step on an H200 is;
    floor    never less than a 0.5B draft's step per layer there (the profile's draft: 1.42 ms over 24 layers)
             plus its lm_head's bytes: small graphs on a GPU are bound by their kernel launches, not their bytes;
    cpu      the ratio head_cost.py measured on this 2-core CPU (benchmarks/README.md), if given with --cpu;
- acceptance: ASSUMED, from the heads' makers and llama.cpp reports (ACCEPTANCE below): a per-token acceptance alpha,
  constant along the draft, so a draft of k tokens yields 1 + alpha (1 - alpha^k) / (1 - alpha) tokens a pass.

A step then costs the target's pass of k + 1 rows, the head's k steps (MTP, EAGLE-3: one decode per drafted token;
DFlash: one block), and its catch-up on the accepted rows (one more decode, at the head's step); the speedup is
tokens a pass x the target's plain step / that.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from localspec.speculative.profile import CostProfile  # noqa: E402

PROFILE = Path(__file__).resolve().parent / "gpu" / "h200-8b-q4_0+0.5b-q8_0.json"

# Parameters each step reads, in millions (the published shapes; benchmarks/gpu/mkheads.py writes the same).
_QWEN3_8B_LAYER = 4096 * 4096 * 2 + 1024 * 4096 * 2 + 3 * 12288 * 4096  # q, o, k, v, FFN
_QWEN35_9B_DELTANET = 8192 * 4096 + 2 * 4096 * 4096 + 2 * 32 * 4096 + 3 * 12288 * 4096
_QWEN35_9B_ATTN = 8192 * 4096 + 2 * 1024 * 4096 + 4096 * 4096 + 3 * 12288 * 4096
HEADS = {
    # name: (target params a step reads, head params a step reads, rows of its lm_head, layers a step runs)
    "mtp": (24 * _QWEN35_9B_DELTANET + 8 * _QWEN35_9B_ATTN + 248320 * 4096,
            4096 * 8192 + _QWEN35_9B_ATTN + 248320 * 4096, 248320, 1),
    "eagle3": (36 * _QWEN3_8B_LAYER + 151936 * 4096,
               (4096 * 8192 + 1024 * 8192 * 2 + 4096 * 4096 + 3 * 12288 * 4096) + 32000 * 4096, 32000, 1),
    "dflash": (36 * _QWEN3_8B_LAYER + 151936 * 4096, 5 * _QWEN3_8B_LAYER + 4096 * 5 * 4096 + 151936 * 4096,
               151936, 5),
}
# Per-token acceptance alpha, and the draft length it was reported at: what the makers publish.
ACCEPTANCE = {
    "mtp": (0.80, 2, "about 80% acceptance at 2 draft tokens (unsloth's Qwen3.6 MTP GGUFs; llama.cpp #24340: 0.73)"),
    "eagle3": (0.70, 3, "acceptance length 2.5-3 at 3 drafts for Qwen3 heads (EAGLE-3 paper, RedHatAI speculators)"),
    "dflash": (0.73, 15, "acceptance length 3.69 with 16-token blocks (llama.cpp #27342; DFlash2: 4.83)"),
}


def tokens_per_pass(alpha: float, k: int) -> float:
    return 1.0 + (alpha * (1 - alpha ** k) / (1 - alpha) if alpha < 1 else k)


def head_step(name: str, profile: CostProfile, how: str, cpu: dict[str, float]) -> float:
    target_params, head_params, _, layers = HEADS[name]
    step = profile.single_token_s()
    if how == "bytes":
        return step * head_params / target_params
    if how == "floor":
        per_layer = profile.draft_step_s() / 24  # the 0.5B draft: 24 layers
        lm_head_share = step * (HEADS[name][2] * 4096) / target_params
        return max(step * head_params / target_params, layers * per_layer + lm_head_share)
    return step * cpu[name]


def project(name: str, profile: CostProfile, how: str, cpu: dict[str, float], k: int | None = None) -> dict:
    alpha, k_pub, source = ACCEPTANCE[name]
    k = k or k_pub
    h = head_step(name, profile, how, cpu)
    drafting = h * (1 if name == "dflash" else k)
    catch_up = h
    pass_s = profile.pass_s(k + 1, k + 1)
    tpp = tokens_per_pass(alpha, k)
    step = profile.single_token_s()
    return {"head": name, "head_step": how, "k": k, "alpha": alpha, "tokens_per_pass": round(tpp, 3),
            "head_step_ms": round(1000 * h, 3), "head_share": round(h / step, 4),
            "pass_ms": round(1000 * pass_s, 3), "step_ms": round(1000 * (pass_s + drafting + catch_up), 3),
            "speedup": round(tpp * step / (pass_s + drafting + catch_up), 3), "acceptance_source": source}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", type=Path, default=PROFILE)
    p.add_argument("--cpu", metavar="MTP,EAGLE3,DFLASH", help="head/target step ratios measured by head_cost.py")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    profile = CostProfile.load(args.profile)
    cpu = dict(zip(("mtp", "eagle3", "dflash"), map(float, args.cpu.split(",")))) if args.cpu else {}
    rows = [project(n, profile, how, cpu) for n in HEADS for how in ("bytes", "floor", "cpu") if how != "cpu" or cpu]
    if args.json:
        print(json.dumps({"profile": str(args.profile), "target_step_ms": round(1000 * profile.single_token_s(), 3),
                          "projections": rows}, indent=2))
        return 0
    print(f"target step {1000 * profile.single_token_s():.2f} ms ({args.profile.name})")
    for r in rows:
        print(f"{r['head']:7} head step {r['head_step']:6} {r['head_step_ms']:6.3f} ms ({100 * r['head_share']:4.1f}%), "
              f"k={r['k']:2}, alpha {r['alpha']:.2f}: {r['tokens_per_pass']:.2f} tokens a pass, "
              f"{r['step_ms']:.2f} ms a step -> {r['speedup']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
