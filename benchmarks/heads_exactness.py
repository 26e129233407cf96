#!/usr/bin/env python3
"""Each draft head on tiny random-weight GGUFs (runtime/tinyheads.py): greedy output against target-only decoding,
token for token, and what the head drafted (issue 35; benchmarks/README.md quotes the table). The product's own
path: load_pair with the head, build_engine with the given drafters, the hybrid's pricing under a GPU-like cost
profile (on the tiny models a head costs as much as its target, so this machine's prices would keep it out).

    python benchmarks/heads_exactness.py [--drafters head|all] [--tokens 96] [--json]

Figures here are CPU-independent: identical outputs, drafted and accepted tokens, tokens per target pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from localspec.runtime.context import ContextSettings  # noqa: E402
from localspec.runtime.pair import load_pair  # noqa: E402
from localspec.runtime.tinyheads import write_dflash, write_eagle3, write_qwen35, write_step35  # noqa: E402
from localspec.runtime.tinymodel import write_tiny_llama  # noqa: E402
from localspec.speculative import names as registry  # noqa: E402
from localspec.speculative.builder import build_engine  # noqa: E402
from localspec.speculative.decoder import GenParams  # noqa: E402
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig  # noqa: E402
from localspec.speculative.profile import FORMAT, CostProfile  # noqa: E402

PROMPT = ("read the file name and write the test data to the file, then list the directory and print the result "
          "of the last command")


def gpu_like_profile() -> CostProfile:
    """A 10 ms target step, 0.3 ms a row more, a head token 1 ms (tests/head_helpers.py's profile)."""
    rows = (1, 2, 4, 8, 16, 32, 64)
    head = {"step_s": 0.001, "pass_s": {str(k): 0.001 * (1 + 0.1 * (k - 1)) for k in rows}}
    return CostProfile({"format": FORMAT, "target": {"step_s": 0.01, "pass_s": {str(k): 0.01 + 0.0003 * (k - 1)
                                                                                 for k in rows}},
                        "draft": None, "heads": {n: head for n in ("mtp", "eagle3", "dflash")}})


def files(d: Path) -> dict[str, tuple[Path, Path | None]]:
    llama = write_tiny_llama(d / "llama.gguf")
    q35 = write_qwen35(d / "qwen35.gguf")
    return {"mtp (qwen35, hybrid)": (q35, None),
            "mtp chained (step35, 2 blocks)": (write_step35(d / "step35.gguf"), None),
            "mtp-*.gguf beside qwen35": (write_qwen35(d / "q35-plain.gguf", mtp=False),
                                         write_qwen35(d / "mtp-q35.gguf", mtp_only=True)),
            "eagle3 (llama)": (llama, write_eagle3(d / "eagle3.gguf", llama)),
            "eagle3 (qwen35, hybrid)": (q35, write_eagle3(d / "eagle3-q35.gguf", q35)),
            "dflash (llama)": (llama, write_dflash(d / "dflash.gguf", llama)),
            "dspark (llama)": (llama, write_dflash(d / "dspark.gguf", llama, dspark=True))}


def run(target: Path, head: Path | None, drafters: tuple[str, ...], n: int, draft_max: int) -> dict:
    ctx = ContextSettings(n_ctx=1024, n_batch=16, n_threads=1)
    base = load_pair(target, ctx=ctx)
    try:
        prompt = base.target.tokenize(PROMPT)
        want = build_engine(base, TARGET_ONLY).generate(prompt, GenParams(max_tokens=n)).tokens
    finally:
        base.close()
    pair = load_pair(target, head, ctx=ctx, heads=True)
    try:
        engine = build_engine(pair, DraftingConfig(drafters=drafters, draft_max=draft_max, draft_p_min=0.0),
                              costs=gpu_like_profile())
        engine._calibrate = False
        g = engine.generate(prompt, GenParams(max_tokens=n))
        s = g.stats
        origin = pair.head.origin if pair.head else "?"
        return {"identical": g.tokens == want, "tokens": len(g.tokens), "passes": s.target_passes,
                "tokens_per_pass": round(s.mean_accepted_length, 2), "head_drafted": s.drafters[origin].drafted,
                "head_accepted": s.drafters[origin].accepted, "all_drafted": s.drafted, "all_accepted": s.accepted}
    finally:
        pair.close()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--drafters", choices=("head", "all"), default="head")
    p.add_argument("--tokens", type=int, default=96)
    p.add_argument("--draft-max", type=int, default=4)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    drafters = ("head",) if args.drafters == "head" else registry.NAMES
    with tempfile.TemporaryDirectory() as tmp:
        rows = {name: run(t, h, drafters, args.tokens, args.draft_max) for name, (t, h) in files(Path(tmp)).items()}
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| head | identical to target-only | tokens | target passes | tokens / pass | head drafted / accepted |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {'yes' if r['identical'] else 'NO'} | {r['tokens']} | {r['passes']} | "
              f"{r['tokens_per_pass']:.2f} | {r['head_drafted']} / {r['head_accepted']} |")
    return 0 if all(r["identical"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
