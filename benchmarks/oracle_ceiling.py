#!/usr/bin/env python3
"""The most any drafter could gain on this machine: an oracle that drafts the baseline's own output.

    python benchmarks/oracle_ceiling.py benchmarks/multiturn.jsonl --target gemma-3-270m-q4_k_m.gguf [--limit N] [--json]

Per case, taking turns like `localspec bench` and on the same product path (each case one turn of the turn engine,
with the product's configuration): `baseline` decodes one token per pass; `oracle` then drafts the rest of what
baseline wrote in each phase of the turn (free text, each call, each probe; every token right, as long as the target
stays on it; forced tokens marked as the schema drafter marks them, so their rows skip the output layer), up to 64
tokens per pass; `toolspec` is the real hybrid. What the oracle reaches is the ceiling the verify costs of this
target allow on this CPU (batch rows and logits rows are not free); `toolspec` is reported as a share of it, in
speed and in tokens per pass. On quantized targets the batch may pick differently from single steps: the oracle then
goes on from where its last tokens occur again in baseline's phase (or drafts nothing), so there it is a
near-ceiling; `identical` says how often that happened.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localspec.bench import runner  # noqa: E402
from localspec.bench.suite import load_suite  # noqa: E402
from localspec.launch import RunFlags, open_pair, resolve_config  # noqa: E402
from localspec.speculative.costs import CostModel  # noqa: E402
from localspec.speculative.draft import Draft, Drafter, DraftRequest  # noqa: E402
from localspec.speculative.drafting import MAX_DRAFT  # noqa: E402
from localspec.speculative.profile import CostProfile  # noqa: E402


class OracleDrafter(Drafter):
    """Drafts, in each generation of a turn, the rest of what baseline wrote in the same generation (`phases`:
    (prompt, tokens) for each of baseline's generations in the case), from where the output so far stands in it."""

    name = "oracle"

    def __init__(self, max_len: int = MAX_DRAFT):
        self.phases: list[tuple[list[int], list[int]]] = []
        self.reference: list[int] = []
        # At most the hybrid's own cap a pass (DraftingConfig.max_draft): the engine's room is otherwise the whole
        # batch, and passes of hundreds of rows are neither what toolspec could draft nor always identical to
        # single steps.
        self.max_len = max_len

    def propose(self, req: DraftRequest) -> Draft:
        history = list(req.history)
        # The phase whose prompt this generation continues (the longest that is a prefix of the history).
        found = [(p, t) for p, t in self.phases if len(p) <= len(history) and history[:len(p)] == p]
        draft = Draft()
        if not found:
            return draft
        prompt, self.reference = max(found, key=lambda pt: len(pt[0]))
        done = history[len(prompt):]
        at = self._where(done)
        if at is None:
            return draft
        cons = req.constraint
        consumed = 0
        for tok in self.reference[at:at + min(req.max_len, self.max_len)]:
            ff = cons.forced() if cons is not None else []
            if cons is not None and not cons.consume(tok):
                break
            consumed += 1
            draft.add(tok, self.name, forced=bool(ff) and ff[0] == tok)
        if cons is not None:
            ff = cons.forced() if not cons.done() else []
            draft.next_forced = ff[0] if ff else None
            cons.rollback(consumed)
        return draft

    def _where(self, done: list[int]) -> int | None:
        """Where in the reference the answer goes on: right after `done` while it matches; after a flip, after
        the place nearest that length where its last tokens occur (a flipped digit or word, then the same text
        again); None if they occur nowhere."""
        ref = self.reference
        if done == ref[:len(done)]:
            return len(done)
        for k in range(min(len(done), 16), 1, -1):
            tail = done[-k:]
            ends = [i + k for i in range(len(ref) - k + 1) if ref[i:i + k] == tail]
            if ends:
                return min(ends, key=lambda e: abs(e - len(done)))
        return None

    def observe(self, draft: Draft, n_accepted: int) -> None:
        pass

    def reset(self) -> None:
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite")
    p.add_argument("--target", required=True)
    p.add_argument("--limit", type=int)
    p.add_argument("--n-gpu-layers", type=int, default=None, help="default: all where the build can offload")
    p.add_argument("--tool-choice", choices=("auto", "required"), default=None,
                   help="for cases that name none (as `localspec bench --tool-choice`)")
    p.add_argument("--draft", help="a draft model: the `all` config (toolspec's sources and the draft model) runs too")
    p.add_argument("--cost-profile", metavar="PROFILE.json",
                   help="price drafts with another machine's costs (as `localspec bench --cost-profile`) and report "
                        "each config's projected speedup there")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)

    profile = CostProfile.load(a.cost_profile) if a.cost_profile else None
    config = resolve_config(RunFlags(target=a.target, draft=a.draft, no_draft=not a.draft,
                                     n_gpu_layers=a.n_gpu_layers))
    pair, _ = open_pair(config)
    cases = load_suite(a.suite, a.limit)
    oracle = OracleDrafter(config.drafting.max_draft)
    costs = profile or CostModel()
    kw = dict(warm_up=cases[0], tool_choice=a.tool_choice, profile=profile)
    runs = {"baseline": runner.ConfigRun(pair, config, runner.CONFIGS["baseline"], **kw),
            "oracle": runner.ConfigRun(pair, config, runner.CONFIGS["baseline"], costs=costs, **kw),
            "toolspec": runner.ConfigRun(pair, config, runner.CONFIGS["toolspec"], costs=costs, **kw)}
    if a.draft:
        runs["all"] = runner.ConfigRun(pair, config, runner.CONFIGS["all"], costs=costs, **kw)
    runs["oracle"].engine.drafter = oracle
    phases: list[tuple[list[int], list[int]]] = []  # baseline's generations in its last case: (prompt, tokens)
    plain = runs["baseline"].engine.stream

    def keep(prompt, *args, **kw):
        generated: list[int] = []
        phases.append((list(prompt), generated))
        for ev in plain(prompt, *args, **kw):
            if ev.token >= 0:
                generated.append(ev.token)
            yield ev

    runs["baseline"].engine.stream = keep
    pair.target_ctx.clear()
    raw: dict[str, list] = {k: [] for k in runs}
    for case in cases:
        phases.clear()
        raw["baseline"].append(runs["baseline"].run(case))
        oracle.phases = list(phases)
        raw["oracle"].append(runs["oracle"].run(case))
        for name in [n for n in runs if n not in ("baseline", "oracle")]:
            raw[name].append(runs[name].run(case))

    out = {"cases": len(cases), "target": Path(a.target).name, "draft": Path(a.draft).name if a.draft else None,
           "tool_choice": a.tool_choice, "costs": profile.name if profile else "measured", "configs": {}}
    for name, res in raw.items():
        s = runner.summarize(res, raw["baseline"])
        out["configs"][name] = {k: s[k] for k in ("tokens_per_second", "mean_accepted_length", "identical_to_baseline",
                                                  "valid_json", "generated_tokens", "target_passes")}
        shapes = runs[name].engine.totals.pass_shapes  # verify passes by (rows, logits rows): the warm-up has none
        verify = sum(shapes.values())
        out["configs"][name]["rows_per_verify_pass"] = (
            round(sum(rows * n for (rows, _), n in shapes.items()) / verify, 2) if verify else None)
        if profile is not None:
            out["configs"][name]["projected_speedup"] = runner.projected_speedup(res, raw["baseline"])
    tps = {k: v["tokens_per_second"] for k, v in out["configs"].items()}
    for name, v in out["configs"].items():
        v["speedup"] = round(v["tokens_per_second"] / tps["baseline"], 3)
    out["toolspec_share_of_oracle"] = round(tps["toolspec"] / tps["oracle"], 3)
    per_pass = {k: v["mean_accepted_length"] for k, v in out["configs"].items()}
    out["toolspec_tokens_per_pass_share"] = round(per_pass["toolspec"] / per_pass["oracle"], 3)
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"{len(cases)} cases, target {Path(a.target).name}")
    for name, v in out["configs"].items():
        print(f"  {name:9} {v['tokens_per_second']:8.2f} tok/s  speedup {v['speedup']:.2f}x  "
              f"tok/pass {v['mean_accepted_length']:.2f}  passes {v['target_passes']}  "
              f"rows/verify pass {v['rows_per_verify_pass'] or 0:.2f}  identical {v['identical_to_baseline']:.2f}  "
              f"valid {v['valid_json']:.2f}"
              + (f"  projected {v['projected_speedup']}x" if "projected_speedup" in v else ""))
    print(f"toolspec reaches {out['toolspec_share_of_oracle']:.0%} of the oracle's speed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
