#!/usr/bin/env python3
"""Where the time of speculative tool-call decoding goes: a per-pass account of one config on a suite.

    python benchmarks/toolcall_profile.py benchmarks/multiturn.jsonl --target gemma-3-270m-q4_k_m.gguf [--json]

Runs the suite like `localspec bench` (same prompts, grammar, prefix reuse) with every verify pass recorded: tokens
in the batch, rows that needed logits, tokens accepted, time inside llama_decode, and what ended the pass (the
target's own token: a tool name, the start of a value, a token inside a value, a closing quote or brace). With the
cost model the engine fitted on this machine (fixed cost per pass c0, per batch row c1, per logits row c2) the
generation time splits into: passes x c0, useful rows, wasted rows (drafted past the first rejection), logits rows,
and everything outside llama_decode (drafting, grammar, bookkeeping).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localspec.bench import runner  # noqa: E402
from localspec.bench.suite import load_suite  # noqa: E402
from localspec.launch import RunFlags, open_pair, resolve_config  # noqa: E402
from localspec.speculative import engine as engine_mod  # noqa: E402


def ender(model, cache_tail: list[int], token: int) -> str:
    """What kind of choice the target made where the pass ended."""
    before = model.detokenize(cache_tail)
    piece = model.token_bytes(token).decode("utf-8", "replace")
    if token in model.eog_tokens:
        return "end of call"
    if before.endswith('"name": "'):
        return "tool name"
    if before.endswith('": "') or before.endswith('": ') or before.endswith('":'):
        return "value start"
    if piece[:1] in '",}]':
        return "value end"
    return "inside a value"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite")
    p.add_argument("--target", required=True)
    p.add_argument("--draft")
    p.add_argument("--config", default="toolspec", choices=sorted(runner.CONFIGS))
    p.add_argument("--limit", type=int)
    p.add_argument("--tool-choice", choices=("auto", "required"), default=None,
                   help="for cases that name none (as `localspec bench --tool-choice`)")
    p.add_argument("--n-gpu-layers", type=int, default=None, help="default: all where the build can offload")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)

    passes: list[dict] = []
    engines = []
    orig_verify = engine_mod.SpecEngine._verify

    def verify(self, last, draft, sampling, constraint, rng, stats):
        t0 = time.perf_counter()
        acc, nxt = orig_verify(self, last, draft, sampling, constraint, rng, stats)
        n = len(draft)
        passes.append({"tokens": n + 1, "rows": sum(not f for f in draft.forced) + (draft.next_forced is None),
                       "accepted": acc,
                       "wasted": n - acc, "s": time.perf_counter() - t0,
                       "ender": ender(self.target.model, self.target.tokens[-8:], nxt)})
        return acc, nxt

    engine_mod.SpecEngine._verify = verify
    build = runner.build_engine
    runner.build_engine = lambda *x, **k: engines.append(build(*x, **k)) or engines[-1]

    config = resolve_config(RunFlags(target=a.target, draft=a.draft, n_gpu_layers=a.n_gpu_layers,
                                     draft_n_gpu_layers=a.n_gpu_layers))
    pair, _ = open_pair(config)
    cases = load_suite(a.suite, a.limit)
    results = runner.run_config(pair, config, cases, runner.CONFIGS[a.config], tool_choice=a.tool_choice)
    passes = passes[1:]  # the warm-up generation's single pass
    costs = engines[-1].costs
    c0, c1, c2 = costs.coefficients() or (0.0, 0.0, 0.0)
    gen_s = sum(r.generation_s for r in results)
    decode_s = sum(x["s"] for x in passes)
    n_pass = len(passes)
    useful = sum(x["tokens"] - x["wasted"] for x in passes)
    wasted = sum(x["wasted"] for x in passes)
    rows = sum(x["rows"] for x in passes)
    generated = sum(r.generated for r in results)
    out = {
        "cases": len(cases), "config": a.config, "generated_tokens": generated, "generation_s": round(gen_s, 3),
        "tokens_per_second": round(generated / gen_s, 2),
        "target_single_token_ms": round(1e3 * costs.single_token_s(), 2),
        "costs_ms": {"per_pass": round(1e3 * c0, 2), "per_row": round(1e3 * c1, 2), "per_logits_row": round(1e3 * c2, 2)},
        "verify_passes": n_pass, "passes_per_case": round(n_pass / len(cases), 2),
        "rows": {"useful": useful, "wasted": wasted, "with_logits": rows},
        "split_s": {"passes x c0": round(n_pass * c0, 3), "useful rows x c1": round(useful * c1, 3),
                    "wasted rows x c1": round(wasted * c1, 3), "logits rows x c2": round(rows * c2, 3),
                    "verify, measured": round(decode_s, 3), "outside verify (drafting, grammar, loop)":
                        round(gen_s - decode_s, 3)},
        "pass_enders": dict(Counter(x["ender"] for x in passes).most_common()),
    }
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"{out['cases']} cases, {a.config}: {generated} tokens in {gen_s:.2f} s = {out['tokens_per_second']} tok/s; "
          f"single target step {out['target_single_token_ms']} ms")
    print(f"fitted costs: {out['costs_ms']['per_pass']} ms per pass + {out['costs_ms']['per_row']} ms per row "
          f"+ {out['costs_ms']['per_logits_row']} ms per logits row")
    print(f"{n_pass} verify passes ({out['passes_per_case']} per case); rows: {useful} useful, {wasted} wasted, "
          f"{rows} with logits")
    for k, v in out["split_s"].items():
        print(f"  {k:42} {v:7.3f} s")
    print("what ended each pass (the target's own token):", out["pass_enders"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
