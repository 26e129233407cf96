#!/usr/bin/env python3
"""Why a speculative output differs from baseline: the target's logits for both tokens at the first difference,
evaluated one token at a time (as baseline decodes) and in one batch (as a verify pass does).

    python benchmarks/near_ties.py RESULT.json SUITE.jsonl --target TARGET.gguf [--config toolspec]

RESULT.json comes from `localspec bench ... --json --outputs` on the same suite and target.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import localspec  # noqa: E402,F401  (first: llama.cpp's libraries load before numpy's, localspec/native_first.py)
import numpy as np  # noqa: E402

from localspec.bench.runner import case_prompt  # noqa: E402
from localspec.bench.suite import load_suite  # noqa: E402
from localspec.launch import RunFlags, open_pair, resolve_config  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("result")
    p.add_argument("suite")
    p.add_argument("--target", required=True)
    p.add_argument("--config", default="toolspec")
    a = p.parse_args(argv)
    outputs = json.loads(Path(a.result).read_text())["outputs"]
    cases = {c.id: c for c in load_suite(a.suite)}
    pair, _ = open_pair(resolve_config(RunFlags(target=a.target, no_draft=True)))
    m, ctx = pair.target, pair.target_ctx
    for base, spec in zip(outputs["baseline"], outputs[a.config]):
        # Everything each turn wrote, answer and calls in order (older results: the text alone).
        wb, ws = base.get("written", base["text"]), spec.get("written", spec["text"])
        if wb == ws:
            continue
        tb = m.tokenize(wb, add_special=False)
        ts = m.tokenize(ws, add_special=False)
        k = next((i for i, (x, y) in enumerate(zip(tb, ts)) if x != y), min(len(tb), len(ts)))
        if k >= max(len(tb), len(ts)):
            continue
        # Where one output is the other plus more, the shorter one ended: it picked an end-of-generation token
        # (the text does not show it), compared as the likeliest of the model's end tokens.
        prompt = case_prompt(pair, cases[base["id"]])
        rows = {}
        for way in ("one at a time", "one batch"):
            ctx.clear()
            ctx.prefill(prompt, logits_last=(k == 0))
            if way == "one at a time":
                for t in tb[:k]:
                    ctx.decode([t])
            elif k:
                ctx.decode(tb[:k], "last")
            rows[way] = np.array(ctx.logits(-1), copy=True)
        for way, logits in rows.items():
            end = max(m.eog_tokens, key=lambda t: logits[t])
            b, c = (tb[k] if k < len(tb) else end), (ts[k] if k < len(ts) else end)
            print(f"{base['id']}  {way:13}  baseline {_name(m, b)!r}: {logits[b]:.4f}   "
                  f"{a.config} {_name(m, c)!r}: {logits[c]:.4f}")
    return 0


def _name(model, token: int) -> str:
    return model.detokenize([token]) or model.token_bytes(token).decode("utf-8", "replace")


if __name__ == "__main__":
    sys.exit(main())
