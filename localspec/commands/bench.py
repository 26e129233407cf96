"""`localspec bench SUITE.jsonl`: tool-call decoding speed and accuracy per drafting config, side by side, on the
product's own turn engine and configuration (a pair, or --target/--draft, and every model flag `run` takes)."""

from __future__ import annotations

import json
import sys

from localspec.commands.shared_flags import add_model_args, config_from_args
from localspec.errors import ConfigError

DEFAULT_CONFIGS = "baseline,model,toolspec,all"
IDENTICAL_NOTE = ("identical: the share of cases a config wrote exactly as baseline (the target alone) did; below 1.00 "
                  "where a batched pass of the target broke a near-tie the other way: rare with F16 weights, more "
                  "often with quantized ones, whose batches move the logits further (README: When greedy output is "
                  "exact; benchmarks/near_ties.py shows where)")


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmark tool-call drafting configs on a suite (BFCL format)",
                       description="Tool-call decoding speed and accuracy per drafting config, side by side. "
                                   f"{IDENTICAL_NOTE}")
    p.add_argument("suite", metavar="SUITE.jsonl")
    add_model_args(p)
    p.add_argument("--configs", default=None,
                   help="comma-separated drafting configs to compare: baseline (the target alone), model (the draft "
                        "model), toolspec (schema, history and n-gram drafting), all (ONE config: every drafter at "
                        f"once, not every config); default: {DEFAULT_CONFIGS}, without the draft model's configs when "
                        "the pair has none")
    p.add_argument("--tool-choice", choices=("auto", "required"), default=None,
                   help="for cases whose suite line names none (default: auto, as `run --tools` and `serve`)")
    p.add_argument("--max-string", type=int, default=200, metavar="N",
                   help="bound strings the tools' schemas leave unbounded (a small model looping in a string still "
                        "ends its call; 0: no bound; default 200)")
    p.add_argument("--max-items", type=int, default=24, metavar="N",
                   help="bound arrays likewise (0: no bound; default 24)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="first N cases only")
    p.add_argument("--max-tokens", type=int, default=384, metavar="N", help="most tokens in one case's turn (default 384)")
    p.add_argument("--outputs", action="store_true", help="include every case's output in the JSON")
    p.add_argument("--cost-profile", metavar="PROFILE.json",
                   help="price passes with another machine's costs (benchmarks/gpu/profile.py makes one from "
                        "llama-bench) and add each config's projected_speedup there")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args) -> int:
    from localspec.bench.runner import CONFIGS, run_bench
    from localspec.bench.suite import load_suite
    from localspec.launch.open import open_pair
    from localspec.turns import Bounds

    asked = args.configs is not None
    configs = [c.strip() for c in (args.configs or DEFAULT_CONFIGS).split(",") if c.strip()]
    bad = [c for c in configs if c not in CONFIGS]
    if bad or not configs:
        raise ConfigError(f"unknown config(s) {', '.join(bad) or '(none)'}; choose from {', '.join(CONFIGS)}")
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be >= 1")
    if args.max_tokens < 1:
        raise ConfigError("--max-tokens must be >= 1")
    if args.max_string < 0 or args.max_items < 0:
        raise ConfigError("--max-string and --max-items must be >= 0 (0: no bound)")
    cases = load_suite(args.suite, args.limit)
    profile = None
    if args.cost_profile:
        from localspec.speculative import CostProfile

        profile = CostProfile.load(args.cost_profile)  # before loading models: a bad file fails fast
    config = config_from_args(args)
    if config.selection.draft is None and any("model" in CONFIGS[c] for c in configs):
        if asked:
            raise ConfigError("configs 'model' and 'all' need a draft model (--draft PATH or a pair with one)")
        configs = [c for c in configs if "model" not in CONFIGS[c]]
    pair, _ = open_pair(config)
    piped = not sys.stderr.isatty()

    def progress(name, i, n, r):
        if args.json:
            return
        if piped:  # a log, not a terminal: one line per case
            if name == configs[-1]:
                print(f"case {i}/{n}", file=sys.stderr, flush=True)
        else:
            print(f"\r{name:9} {i}/{n}", end="", file=sys.stderr, flush=True)

    try:
        bounds = Bounds(max_string=args.max_string or None, max_items=args.max_items or None)
        result = run_bench(pair, config, cases, configs, max_tokens=args.max_tokens, tool_choice=args.tool_choice,
                           bounds=bounds, progress=progress, profile=profile)
    finally:
        pair.close()
    if not args.outputs:
        result.pop("outputs", None)
    if args.json:
        print(json.dumps(result))
        return 0
    if not piped:
        print("\r", end="", file=sys.stderr)
    cols: tuple[str, ...] = ("tokens_per_second", "speedup", "mean_accepted_length", "acceptance_rate", "forced_share",
            "identical_to_baseline", "valid_json", "ast_accuracy", "prefill_s", "latency_s")
    heads: tuple[str, ...] = ("config", "tok/s", "speedup", "tok/pass", "accept", "forced", "identical", "valid", "AST", "prefill_s",
             "latency_s")
    if profile is not None:
        cols, heads = cols + ("projected_speedup",), heads + ("projected",)
    print(f"{result['cases']} cases")
    print("  ".join(f"{h:>9}" for h in heads))
    for name, s in result["configs"].items():
        # A rate of nothing drafted is "-", as everywhere else (the JSON keeps its 0.0).
        shown = {**s, "acceptance_rate": s["acceptance_rate"] if s.get("drafted") else None}
        cells = [name] + ["-" if shown[c] is None else f"{shown[c]:.3f}" if isinstance(shown[c], float)
                          else str(shown[c]) for c in cols]
        print("  ".join(f"{c:>9}" for c in cells))
    for note in (identical_note(result["configs"]), no_calls_note(result["configs"], args.tool_choice)):
        if note:
            print(note)
    return 0


def no_calls_note(configs: dict[str, dict], tool_choice: str | None) -> str:
    """Why `valid` and `AST` are 0 when no case wrote a call (a model that answers in text): otherwise a newcomer
    reads them as broken calls."""
    if tool_choice == "required" or any(s.get("calls_share") for s in configs.values()):
        return ""
    return ("no case wrote a tool call (valid and AST score the calls): the model answered in text; a suite whose "
            "cases all expect a call runs with --tool-choice required")


def identical_note(configs: dict[str, dict]) -> str:
    """What `identical` below 1.00 means, under a table that shows one ("" otherwise): a user who sees 0.33 should
    not have to guess whether drafting broke the output."""
    parted = [s["identical_to_baseline"] for s in configs.values() if s.get("identical_to_baseline") is not None]
    return IDENTICAL_NOTE if any(x < 1.0 for x in parted) else ""
