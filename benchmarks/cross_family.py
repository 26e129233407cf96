"""Draft models of another family (issue 36): a pair whose draft has another tokenizer beside the same target with a
draft of its own family, on tool calls, edits and prose, on the product's own path.

    python benchmarks/cross_family.py run  --target T.gguf --draft D.gguf --name t-d [--limit 3] [--cost-profile P]
    python benchmarks/cross_family.py table RESULTS_DIR

`run` writes RESULTS_DIR/<suite>-<name>[-h200].json from `localspec bench SUITE --configs baseline,model,all
--tool-choice required` (workspace_judge.jsonl and edits.jsonl, the first --limit cases; with --cost-profile the
policy prices passes as that machine would and each config gets its projected speedup there), and
RESULTS_DIR/prose-<name>.json from `localspec run --json` on benchmarks/prose.py's six prompts (its tuned and
held-out ones), greedy, 96 tokens, each target-only, with the pair's draft under the default drafters, and with the
draft model alone (`--drafters model`), taking turns prompt by prompt. `table` prints the markdown rows
benchmarks/README.md shows: acceptance, tokens per pass, outputs identical to target-only, speed against
target-only measured side by side in one run, and the projection.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prose import HELDOUT, PROMPTS  # noqa: E402

SUITES = {"ws": "workspace_judge.jsonl", "ed": "edits.jsonl"}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def localspec(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localspec", *argv], capture_output=True, text=True, env=ENV)


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "-h200" if args.cost_profile else ""
    for short, suite in SUITES.items():
        path = out / f"{short}-{args.name}{tag}.json"
        if path.exists():
            continue
        cmd = ["bench", str(Path(__file__).parent / suite), "--target", args.target, "--draft", args.draft,
               "--configs", "baseline,model,all", "--tool-choice", "required", "--limit", str(args.limit), "--json",
               "--outputs"] + (["--cost-profile", args.cost_profile] if args.cost_profile else [])
        p = localspec(*cmd)
        if p.returncode:
            raise SystemExit(f"localspec {' '.join(cmd)}: {p.stderr.strip().splitlines()[-1:]}")
        path.write_text(p.stdout)
    path = out / f"prose-{args.name}.json"
    if args.cost_profile or path.exists():
        return
    rows = []
    for name, prompt in {**PROMPTS, **HELDOUT}.items():
        for config in ("no-draft", "default", "model"):
            extra = ["--no-draft"] if config == "no-draft" else ["--draft", args.draft] + (
                ["--drafters", "model"] if config == "model" else [])
            p = localspec("run", "--json", "--no-transcript", "--target", args.target, "--max-tokens", "96",
                          "--temperature", "0", "--threads", "2", *extra, prompt)
            if p.returncode:
                raise SystemExit(f"localspec run failed: {p.stderr.strip().splitlines()[-1:]}")
            d = json.loads(p.stdout)
            rows.append({"prompt": name, "config": config, "text": d["text"], "stats": d["stats"]})
    path.write_text(json.dumps(rows))


def bench_rows(path: str) -> list[str]:
    d = json.load(open(path))
    base = d["configs"]["baseline"]
    rows = []
    for name in ("model", "all"):
        c = d["configs"].get(name)
        if c is None:
            continue
        m = c["drafters"].get("model", {"drafted": 0, "accepted": 0})
        proj = c.get("projected_speedup")
        rows.append(f"| {Path(path).stem} | {d['cases']} | {name} | {m['accepted']}/{m['drafted']} | "
                    f"{100 * c['acceptance_rate']:.0f}% | {c['mean_accepted_length']:.2f} | "
                    f"{c['identical_to_baseline']:.2f} | {c['speedup']:.2f}x ({base['tokens_per_second']:.1f} tok/s) | "
                    f"{'–' if proj is None else f'{proj:.2f}x'} |")
    return rows


def prose_rows(path: str) -> list[str]:
    rows = json.load(open(path))
    base = {r["prompt"]: r for r in rows if r["config"] == "no-draft"}
    out = []
    for config in ("default", "model"):
        mine = [r for r in rows if r["config"] == config]
        same = sum(r["text"] == base[r["prompt"]]["text"] for r in mine)
        m = [r["stats"]["drafters"].get("model", {"drafted": 0, "accepted": 0}) for r in mine]
        drafted, accepted = sum(x["drafted"] for x in m), sum(x["accepted"] for x in m)
        gen = sum(r["stats"]["generated_tokens"] for r in mine)
        passes = sum(r["stats"]["target_passes"] for r in mine)
        ratios = sorted(r["stats"]["tokens_per_second"] / base[r["prompt"]]["stats"]["tokens_per_second"]
                        for r in mine)
        out.append(f"| {Path(path).stem} | {len(mine)} | {config} | {accepted}/{drafted} | – | "
                   f"{gen / passes:.2f} | {same}/{len(mine)} | mean {sum(ratios) / len(ratios):.2f}x, worst "
                   f"{ratios[0]:.2f}x | – |")
    return out


def table(args) -> None:
    print("| run | cases | config | draft model accepted/drafted | acceptance (all sources) | tokens / pass | "
          "identical to target-only | speed vs target-only, this CPU | projected H200 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(args.results, "*.json"))):
        name = Path(path).stem
        if name.startswith("prose-"):
            print("\n".join(prose_rows(path)))
        elif name.split("-")[0] in SUITES:
            print("\n".join(bench_rows(path)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--target", required=True)
    r.add_argument("--draft", required=True)
    r.add_argument("--name", required=True, help="names the result files")
    r.add_argument("--limit", type=int, default=3)
    r.add_argument("--cost-profile")
    r.add_argument("--out", default="benchmarks/results/cross_family")
    t = sub.add_parser("table")
    t.add_argument("results")
    args = ap.parse_args()
    (run if args.cmd == "run" else table)(args)


if __name__ == "__main__":
    main()
