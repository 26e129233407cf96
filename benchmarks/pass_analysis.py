#!/usr/bin/env python3
"""Where the target passes go: `toolspec` against an oracle that knows baseline's answer, pass by pass.

    python benchmarks/pass_analysis.py SUITE --target TARGET.gguf [--limit N] [--tool-choice auto|required]
        [--threads N] [--json] [--passes-out FILE] [--price-h200 | --live-costs] [--reference EARLIER.json]

Per case, taking turns like `localspec bench` and on the same product path (the product's configuration; each case
one turn of the turn engine, i.e. several generations: free text, each call, each probe): `baseline` (one token per
pass), `oracle` (drafts the rest of what baseline wrote in the same generation, at most the hybrid's 64 tokens a
pass: benchmarks/oracle_ceiling.py's OracleDrafter) and `toolspec` (the real hybrid). For oracle and toolspec every
verify pass is recorded (rows in the batch, tokens accepted); for toolspec each pass is then classified by where
it ended in the turn's output (every generation's tokens in order), i.e. where the target's own token had to come
from a pass of its own:

    text phase / probe phase    free text (before a call, or after one): no call text to place it in
    end of <phase>              the generation's end (its last pass found the end of the text, call or probe)
    name / key / value start / value end / structure    the call's JSON around the values
    <key>: copy goes on     inside a string whose text so far ends with text found in the context (24 bytes), and
                            what followed it there is what the model wrote: a copy drafter had the answer
    <key>: copy diverges    ... found, but the model writes something else there (the change itself)
    <key>: copy resumes     the text so far is not found, but what the model writes next (16 bytes) is: new text
                            has ended and the old text resumes (an inserted or changed line): re-anchoring wins it
    <key>: new text         neither: text nothing in the context predicts (the draft model's ground)

<key> is old, new, content or value (any other string). The context searched is the prompt's text with earlier
calls' strings read unescaped, plus, for `new`, the same call's `old`.

Prints tokens per pass, rows per pass and passes for each config, the identical share, valid JSON, and the pass
ends; --passes-out writes every toolspec pass (JSON lines: its phase, generation, `at` the token index in the
turn's output where it ended) for a closer look.

What a token tree could add (several candidates verified in one pass, branches sharing the prefix): for every pass
whose draft was rejected, the candidates the sources offered for that proposal are checked against what the model
wrote; where one not drafted would have been accepted further than the drafted one got, a second branch would
have won those tokens in the same pass (an upper bound: the cut and the grammar are not applied to it). The JSON
output keeps every config's outputs (text and calls): given back as --reference, a later run (another commit) runs
toolspec alone and takes baseline's outputs and the oracle's figures from it (on F16 weights both are fixed), a
third of the time.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixed_costs import FixedCosts, curve_steps, h200_costs  # noqa: E402
from oracle_ceiling import OracleDrafter  # noqa: E402

from localspec.bench import runner  # noqa: E402
from localspec.bench.suite import load_suite  # noqa: E402
from localspec.launch import RunFlags, open_pair, resolve_config  # noqa: E402
from localspec.speculative import engine as engine_mod  # noqa: E402
from localspec.speculative.costs import CostModel  # noqa: E402
from localspec.speculative.sources.copy import raw_view, unescape_partial  # noqa: E402
from localspec.turns import engine as turn_engine  # noqa: E402

TAIL, RESUME = 24, 16


def scan(text: str) -> tuple[str, str, int]:
    """Where a call's text stands at its end: ("string", key, start) inside the string value of `key` (its body
    starts at `start`), ("key", last key, start) inside a key, ("outside", last key, -1) elsewhere."""
    stack: list[str] = []
    in_str = esc = is_key = expecting_key = False
    start, last_key = -1, ""
    for i, c in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
                if is_key:
                    last_key = text[start:i]
            continue
        if c == '"':
            in_str, start, is_key, expecting_key = True, i + 1, expecting_key, False
        elif c in "{[":
            stack.append(c)
            expecting_key = c == "{"
        elif c in "}]":
            if stack:
                stack.pop()
            expecting_key = False
        elif c == ",":
            expecting_key = bool(stack) and stack[-1] == "{"
        elif c == ":":
            expecting_key = False
    if in_str:
        return ("key" if is_key else "string"), last_key, start
    return "outside", last_key, -1


def classify(out: str, at: int, corpus: str) -> str:
    """What kind of place output offset `at` is in the call text `out` (see the module docstring)."""
    before = out[:at]
    where, key, start = scan(before)
    if where == "key":
        return "key"
    if where == "outside":
        if before.rstrip().endswith(":"):
            return "value start"
        if before[-1:].isalnum():
            return "value: number or literal"
        return "structure"
    if key == "name":
        return "name"
    kind = key if key in ("old", "new", "content") else "value"
    written, _ = unescape_partial(before[start:])
    rest = out[at:]
    end = _string_end(rest)
    true_next, _ = unescape_partial(rest[:end])
    if not written:
        return "value start"
    if not true_next:
        return "value end"
    ctx = corpus
    if key == "new":
        ctx = corpus + "\x00" + _call_old(before)
    tail = written[-TAIL:]
    pos = ctx.find(tail)
    found = pos >= 0
    while pos >= 0:
        if ctx.startswith(true_next[:8], pos + len(tail)):
            return f"{kind}: copy goes on"
        pos = ctx.find(tail, pos + 1)
    if found:
        return f"{kind}: copy diverges"
    if len(true_next) >= RESUME and true_next[:RESUME] in ctx:
        return f"{kind}: copy resumes"
    return f"{kind}: new text"


def _string_end(rest: str) -> int:
    esc = False
    for i, c in enumerate(rest):
        if esc:
            esc = False
        elif c == "\\":
            esc = True
        elif c == '"':
            return i
    return len(rest)


def _call_old(before: str) -> str:
    i = before.rfind('"old": "')
    if i < 0:
        return ""
    body = before[i + 8:]
    return unescape_partial(body[:_string_end(body)])[0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite")
    p.add_argument("--target", required=True)
    p.add_argument("--limit", type=int)
    p.add_argument("--tool-choice", choices=runner.TOOL_CHOICES, default=None,
                   help="for cases that name none (as `localspec bench --tool-choice`)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--passes-out")
    p.add_argument("--threads", type=int, default=0,
                   help="llama.cpp threads (0: one per core; 1 wastes least on a machine shared with other jobs)")
    p.add_argument("--reference", help="an earlier run's --json output: baseline and oracle are not run again")
    p.add_argument("--live-costs", action="store_true",
                   help="price drafts by this run's own timings instead of benchmarks/cpu_costs.json")
    p.add_argument("--price-h200", action="store_true",
                   help="price drafts as an H200 running an 8B target would (benchmarks/fixed_costs.py)")
    a = p.parse_args(argv)

    # The product's configuration, as `localspec bench` opens it (target only: the configs bring their drafters).
    config = resolve_config(RunFlags(target=a.target, no_draft=True, threads=a.threads or None))
    pair, _ = open_pair(config)
    model = pair.target
    cases = load_suite(a.suite, a.limit)
    oracle = OracleDrafter(config.drafting.max_draft)
    costs = h200_costs() if a.price_h200 else None if a.live_costs else FixedCosts.for_target(a.target)
    costs = costs or CostModel()
    ref = json.loads(Path(a.reference).read_text()) if a.reference else None
    kw = dict(warm_up=cases[0], tool_choice=a.tool_choice)
    runs = {} if ref else {"baseline": runner.ConfigRun(pair, config, runner.CONFIGS["baseline"], **kw),
                           "oracle": runner.ConfigRun(pair, config, runner.CONFIGS["baseline"], costs=costs, **kw)}
    runs["toolspec"] = runner.ConfigRun(pair, config, runner.CONFIGS["toolspec"], costs=costs, **kw)
    if not ref:
        runs["oracle"].engine.drafter = oracle
    names = {id(r.engine): n for n, r in runs.items()}
    log: list[dict] = []
    offered: list[tuple[int, int, list[int]]] = []  # (pass number, context length, tokens): each source's candidate

    def offering(src):
        plain = src.candidate

        def candidate(context, max_len, constraint=None):
            found = plain(context, max_len, constraint)
            if found is not None and found.tokens:
                offered.append((len(log), len(context), list(found.tokens)))
            return found
        return candidate

    for src in runs["toolspec"].engine.drafter.sources:
        src.candidate = offering(src)
    tree = {"rejected_passes": 0, "extended": 0, "tokens": 0}
    # Each case is one turn: several generations (free text, each call, each probe). Every config's generations in
    # its last case, in order: the turn phase, the generation's prompt, the tokens it emitted and how many it counted.
    gens: dict[str, list[dict]] = {name: [] for name in runs}
    phase_now = [""]
    orig_turn_stream = turn_engine._Turn._stream

    def turn_stream(self, phase, *args, **kw):
        phase_now[0] = phase
        return orig_turn_stream(self, phase, *args, **kw)

    def recording(name, plain):
        def stream(prompt, *args, **kw):
            g = {"phase": phase_now[0], "prompt": list(prompt), "tokens": [], "generated": 0}
            gens[name].append(g)
            inner = plain(prompt, *args, **kw)
            try:
                for ev in inner:
                    if ev.token >= 0:
                        g["tokens"].append(ev.token)
                    yield ev
            finally:
                inner.close()  # the engine's bookkeeping runs now, before the turn reads its statistics
                g["generated"] = inner.stats.generated_tokens
        return stream

    orig_verify = engine_mod.SpecEngine._verify

    def verify(self, last, draft, sampling, constraint, rng, stats):
        gen = stats.generated_tokens  # this generation's count: `at` is an offset in its own output
        acc, nxt = orig_verify(self, last, draft, sampling, constraint, rng, stats)
        name = names.get(id(self))
        log.append({"config": name, "gen": len(gens[name]) - 1 if name else -1, "at": gen + acc,
                    "rows": len(draft) + 1, "drafted": len(draft), "accepted": acc,
                    "origins": sorted(set(draft.origins[acc:acc + 1]))})
        return acc, nxt

    turn_engine._Turn._stream = turn_stream
    engine_mod.SpecEngine._verify = verify
    for name, r in runs.items():
        r.engine.stream = recording(name, r.engine.stream)
    pair.target_ctx.clear()
    raw: dict[str, list] = {k: [] for k in runs}
    ends: Counter = Counter()
    rows: dict[str, list[int]] = {"oracle": [0, 0], "toolspec": [0, 0]}
    # On the H200 curve: each verify pass in single steps, and the single steps baseline takes for the same tokens.
    h200: dict[str, list[float]] = {"oracle": [0.0, 0.0], "toolspec": [0.0, 0.0]}
    out_passes = open(a.passes_out, "w") if a.passes_out else None
    try:
        for case in cases:
            prompt = runner.case_prompt(pair, case)
            for g in gens.values():
                g.clear()
            if not ref:
                raw["baseline"].append(runs["baseline"].run(case))
                # The oracle drafts, in each generation, the rest of baseline's same generation.
                oracle.phases = [(g["prompt"], list(g["tokens"])) for g in gens["baseline"]]
            corpus = raw_view(b"".join(model.token_bytes(t, special=False) for t in prompt)).decode("utf-8", "replace")
            for name in [n for n in ("oracle", "toolspec") if n in runs]:
                del log[:], offered[:]
                res = runs[name].run(case)
                raw[name].append(res)
                rows[name][0] += sum(x["rows"] for x in log)
                rows[name][1] += len(log)
                h200[name][0] += sum(curve_steps(x["rows"]) for x in log)
                # Each generation's first token comes from its prompt's pass, in both.
                h200[name][1] += sum(max(g["generated"] - 1, 0) for g in gens[name])
                if name != "toolspec":
                    continue
                _pass_ends(model, gens[name], log, offered, corpus, tree, ends, out_passes, case.id)
    finally:
        engine_mod.SpecEngine._verify = orig_verify
        turn_engine._Turn._stream = orig_turn_stream
        if out_passes:
            out_passes.close()

    out = {"suite": Path(a.suite).name, "target": Path(a.target).name, "cases": len(cases),
           "costs": "h200" if a.price_h200 else "pinned" if isinstance(costs, FixedCosts) else "live",
           "tool_choice": a.tool_choice, "configs": {}}
    if ref:  # baseline's outputs and the oracle's figures as they were
        base_outs = [o if isinstance(o, dict) else {"text": o, "calls": []}
                     for o in ref["outputs"]["baseline"][:len(cases)]]
        raw["baseline"] = [runner.CaseResult(id="", text=o["text"], calls=o["calls"], valid_json=True, correct=False,
                                             generated=0, passes=0, drafted=0, accepted=0, forced=0, prefill_s=0.0,
                                             generation_s=0.0, latency_s=0.0) for o in base_outs]
        out["configs"]["baseline"] = ref["configs"]["baseline"]
        out["configs"]["oracle"] = ref["configs"]["oracle"]
        out["reference"] = a.reference
    for name, res in raw.items():
        if ref and name == "baseline":
            continue
        s = runner.summarize(res, raw["baseline"])
        row = {k: s[k] for k in ("mean_accepted_length", "target_passes", "generated_tokens", "tokens_per_second",
                                 "identical_to_baseline", "valid_json", "passes_by_phase")}
        if name in rows:
            row["rows_per_verify_pass"] = round(rows[name][0] / max(rows[name][1], 1), 2)
            row["h200_projected_speedup"] = round(h200[name][1] / max(h200[name][0], 1e-9), 2)
        out["configs"][name] = row
    o, t = out["configs"]["oracle"], out["configs"]["toolspec"]
    out["toolspec_share_of_oracle_tokens_per_pass"] = round(t["mean_accepted_length"] / o["mean_accepted_length"], 3)
    out["toolspec_pass_ends"] = dict(ends.most_common())
    out["token_tree_upper_bound"] = tree
    out["outputs"] = {name: [{"text": r.text, "calls": r.calls} for r in res] for name, res in raw.items()}
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"{out['suite']}: {len(cases)} cases, target {out['target']}, {out['costs']} costs"
          + (f", tool choice {a.tool_choice}" if a.tool_choice else ""))
    for name, v in out["configs"].items():
        print(f"  {name:9} tok/pass {v['mean_accepted_length']:6.2f}  passes {v['target_passes']:5}  "
              f"rows/verify pass {v.get('rows_per_verify_pass', 1.0):5.2f}  {v['tokens_per_second']:7.2f} tok/s  "
              f"identical {v['identical_to_baseline']:.2f}  valid JSON {v['valid_json']:.2f}"
              + (f"  H200 projection {v['h200_projected_speedup']:.2f}x" if "h200_projected_speedup" in v else ""))
    print(f"  toolspec tokens/pass = {out['toolspec_share_of_oracle_tokens_per_pass']:.0%} of the oracle's")
    print(f"  a second branch per pass: {tree['extended']} of {tree['rejected_passes']} rejected passes extended, "
          f"{tree['tokens']} tokens more (upper bound)")
    print("  where toolspec's passes ended:")
    for k, v in ends.most_common():
        print(f"    {v:5}  {k}")
    return 0


def _pass_ends(model, gens: list[dict], log: list[dict], offered, corpus: str, tree: dict, ends: Counter,
               out_passes, case_id: str) -> None:
    """Classify where each of a case's passes ended (one config's turn: `gens` its generations in order, `log` its
    passes) in the turn's output (every generation's tokens in order), and add up the token tree's bound."""
    # Output offsets of each token (bytes decoded one by one: close enough for placing a pass end).
    offs, pos, pieces, starts = [], 0, [], []
    for g in gens:
        starts.append(len(offs))
        for t in g["tokens"]:
            offs.append(pos)
            piece = model.token_bytes(t).decode("utf-8", "replace")
            pieces.append(piece)
            pos += len(piece)
    text = "".join(pieces)
    for k, x in enumerate(log):
        g = gens[x["gen"]]
        toks, phase, local = g["tokens"], g["phase"], x["at"]
        if x["accepted"] < x["drafted"]:
            tree["rejected_passes"] += 1
            best = local
            for _, n_ctx, cand in (o for o in offered if o[0] == k):
                start = n_ctx - len(g["prompt"])
                if not 0 <= start <= local:
                    continue
                n = 0
                while n < len(cand) and start + n < len(toks) and cand[n] == toks[start + n]:
                    n += 1
                best = max(best, start + n)
            if best > local:
                tree["extended"] += 1
                tree["tokens"] += best - local
        # Where the pass ended in the turn's output (the end of its generation when nothing of it came after).
        x["phase"], x["at"] = phase, starts[x["gen"]] + min(local, len(toks))
        at = offs[x["at"]] if x["at"] < len(offs) else len(text)
        if local >= len(toks):
            x["end"] = f"end of {phase}"
        elif phase != "call":  # free text or a probe: no call text to place the end in
            x["end"] = f"{phase} phase"
        else:
            x["end"] = classify(text, at, corpus)
        ends[x["end"]] += 1
        if out_passes:
            out_passes.write(json.dumps({"case": case_id, **x, "before": text[max(0, at - 40):at],
                                         "after": text[at:at + 24]}) + "\n")


if __name__ == "__main__":
    sys.exit(main())
