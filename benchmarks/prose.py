"""Is speculation ever slower than target-only decoding on plain prose? (issue 20, part 1)

Runs `localspec run --json` (greedy, 128 tokens) on three prose prompts, target-only (`--no-draft`) and with the
default drafting policy (and, with `--draft`, the same pair's draft model), taking turns prompt by prompt so that
the host's drift shifts every config alike; prints per prompt the median `stats.tokens_per_second` of the repeats,
the ratio to `--no-draft`, and the engine's own `estimated_speedup` beside it (it should agree within 10%).

    python benchmarks/prose.py --target tests/.cache/smollm2-135m-instruct-f16.gguf [--draft Q4_1.gguf] [--reps 3]

Each run is a fresh process (as a user runs it), so nothing learned carries over between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PROMPTS = {
    "story": "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "hash map": "Explain how a hash map works.",
    "cooking tips": "Give me five cooking tips.",
}
# Prompts the prose policy was never tuned on (--prompts heldout): judged, not tuned.
HELDOUT = {
    "water cycle": "Describe the water cycle to a ten-year-old.",
    "autumn poem": "Write a poem about autumn in a small town.",
    "job email": "Write an email asking my manager for a day off next Friday.",
}


def run_once(target: str, draft: str | None, config: str, prompt: str, max_tokens: int, threads: int) -> dict:
    cmd = [sys.executable, "-m", "localspec", "run", "--json", "--no-transcript", "--target", target,
           "--max-tokens", str(max_tokens), "--temperature", "0", "--threads", str(threads)]
    if config == "no-draft":
        cmd.append("--no-draft")
    elif draft:
        cmd += ["--draft", draft]
    if config == "ngram":
        cmd += ["--drafters", "ngram"]
    out = subprocess.run(cmd + [prompt], capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout)["stats"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", help="the pair's draft model (default policy then may use it)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--configs", default="no-draft,default", help="no-draft, default, ngram (comma-separated)")
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    ap.add_argument("--prompts", choices=("tuned", "heldout"), default="tuned",
                    help="the issue's three prompts (the policy was tuned on them) or three held-out ones")
    args = ap.parse_args()
    prompts = PROMPTS if args.prompts == "tuned" else HELDOUT
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if "no-draft" not in configs:
        configs.insert(0, "no-draft")
    runs: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.reps):
        for name, prompt in prompts.items():
            for config in configs:  # taking turns: a drift shifts every config alike
                runs.setdefault((name, config), []).append(
                    run_once(args.target, args.draft, config, prompt, args.max_tokens, args.threads))
    print(f"target {os.path.basename(args.target)}" + (f", draft {os.path.basename(args.draft)}" if args.draft else "")
          + f"; median of {args.reps}, {args.max_tokens} tokens, greedy")
    print("| prompt | config | tok/s | ratio to --no-draft | estimated_speedup | drafted/accepted | switched off |")
    print("|---|---|---|---|---|---|---|")
    table = []
    for name in prompts:
        base = statistics.median(s["tokens_per_second"] for s in runs[(name, "no-draft")])
        for config in configs:
            stats = runs[(name, config)]
            tps = statistics.median(s["tokens_per_second"] for s in stats)
            known = [s["estimated_speedup"] for s in stats if s.get("estimated_speedup") is not None]
            est = statistics.median(known) if known else None  # None: no data ("–"), never a made-up 0
            drafted = statistics.median(s["drafted"] for s in stats)
            accepted = statistics.median(s["accepted"] for s in stats)
            off = stats[-1].get("switched_off") or {}
            row = {"prompt": name, "config": config, "tokens_per_second": tps,
                   "ratio": tps / base if base else 0.0, "estimated_speedup": est}
            table.append(row)
            shown = "–" if est is None else f"{est:.2f}x"
            print(f"| {name} | {config} | {tps:.1f} | {row['ratio']:.2f}x | {shown} | "
                  f"{drafted:.0f}/{accepted:.0f} | {', '.join(f'{k}: {v}' for k, v in off.items()) or '-'} |")
    if args.json:
        print(json.dumps(table))


if __name__ == "__main__":
    main()
