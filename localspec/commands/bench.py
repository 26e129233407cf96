"""`localspec bench SUITE.jsonl`: tool-call decoding speed and accuracy per drafting config, side by side."""

from __future__ import annotations

import json
import sys

from localspec.errors import ConfigError


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmark tool-call drafting configs on a suite (BFCL format)")
    p.add_argument("suite", metavar="SUITE.jsonl")
    p.add_argument("--target", metavar="PATH", required=True)
    p.add_argument("--draft", metavar="PATH")
    p.add_argument("--configs", default="baseline,model,toolspec,all",
                   help="comma-separated: baseline, model, toolspec, all")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="first N cases only")
    p.add_argument("--max-tokens", type=int, default=384, metavar="N")
    p.add_argument("--ctx-size", type=int, default=4096, metavar="N")
    p.add_argument("--threads", type=int, default=0, metavar="N")
    p.add_argument("--outputs", action="store_true", help="include every case's output in the JSON")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args) -> int:
    from localspec.bench.runner import CONFIGS, run_bench
    from localspec.bench.suite import load_suite
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.pair import load_pair

    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in configs if c not in CONFIGS]
    if bad or not configs:
        raise ConfigError(f"unknown config(s) {', '.join(bad) or '(none)'}; choose from {', '.join(CONFIGS)}")
    if not args.draft and any(c in ("model", "all") for c in configs):
        if "--configs" in sys.argv or args.configs != "baseline,model,toolspec,all":
            raise ConfigError("configs 'model' and 'all' need --draft PATH")
        configs = [c for c in configs if c not in ("model", "all")]
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be >= 1")
    cases = load_suite(args.suite, args.limit)
    pair = load_pair(args.target, args.draft, ctx=ContextSettings(n_ctx=args.ctx_size, n_threads=args.threads))

    def progress(name, i, n, r):
        if not args.json:
            print(f"\r{name:9} {i}/{n}", end="", file=sys.stderr, flush=True)

    result = run_bench(pair, cases, configs, max_tokens=args.max_tokens, progress=progress)
    if not args.outputs:
        result.pop("outputs", None)
    if args.json:
        print(json.dumps(result))
        return 0
    print("\r", end="", file=sys.stderr)
    cols = ("tokens_per_second", "speedup", "mean_accepted_length", "acceptance_rate", "forced_share",
            "identical_to_baseline", "valid_json", "ast_accuracy", "prefill_s", "latency_s")
    heads = ("config", "tok/s", "speedup", "tok/pass", "accept", "forced", "identical", "valid", "AST", "prefill_s",
             "latency_s")
    print(f"{result['cases']} cases")
    print("  ".join(f"{h:>9}" for h in heads))
    for name, s in result["configs"].items():
        cells = [name] + ["-" if s[c] is None else f"{s[c]:.3f}" if isinstance(s[c], float) else str(s[c])
                          for c in cols]
        print("  ".join(f"{c:>9}" for c in cells))
    return 0
