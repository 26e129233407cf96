#!/usr/bin/env python3
"""How far a target's logits move when its rows are computed in one batch instead of one token at a time: the
reason greedy output with drafting is token for token the target alone's only up to near-ties (README, "When greedy
output is exact").

    python benchmarks/batch_rows.py MODEL.gguf [MODEL.gguf ...] [--rows 8,16,32,48,64] [--threads N]

For each model and batch size: the same text is read after a short head one token at a time, then again as one
batch (a verify pass, or a prompt read in one go), and each row's logits are compared: the largest and mean
absolute difference, and how many rows' argmax differs. llama.cpp picks its kernels by weight type, batch size and
device, so the figures hold for the machine they were measured on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import localspec  # noqa: E402,F401  (first: llama.cpp's libraries load before numpy's, localspec/native_first.py)
import numpy as np  # noqa: E402

from localspec.runtime.context import ContextSettings  # noqa: E402
from localspec.runtime.pair import load_pair  # noqa: E402

TEXT = ("The quick brown fox jumps over the lazy dog. Then it ran into the forest and found a small house made of "
        "stone, where an old woman was baking bread for the winter. ") * 8
HEAD = 6  # tokens read before the rows compared


def measure(path: str, rows: list[int], threads: int) -> list[dict]:
    pair = load_pair(path, None, ctx=ContextSettings(n_ctx=1024, n_threads=threads))
    try:
        model, ctx = pair.target, pair.target_ctx
        tokens = model.tokenize(TEXT)
        out = []
        for n in rows:
            head, tail = tokens[:HEAD], tokens[HEAD:HEAD + n]
            ctx.clear()
            ctx.prefill(head)
            alone = []
            for t in tail:
                ctx.decode([t])
                alone.append(np.array(ctx.logits(-1), copy=True))
            ctx.clear()
            ctx.prefill(head)
            ctx.decode(tail, "all")
            batch = [np.array(ctx.logits(i), copy=True) for i in range(len(tail))]
            diffs = [float(np.max(np.abs(a - b))) for a, b in zip(alone, batch)]
            out.append({"model": Path(path).name, "rows": len(tail), "max_abs": round(max(diffs), 4),
                        "mean_abs": round(float(np.mean(diffs)), 4),
                        "argmax_differs": sum(int(np.argmax(a) != np.argmax(b)) for a, b in zip(alone, batch))})
        return out
    finally:
        pair.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", metavar="MODEL.gguf")
    p.add_argument("--rows", default="8,16,32,48,64", help="batch sizes (default 8,16,32,48,64)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    a = p.parse_args(argv)
    rows = [int(r) for r in a.rows.split(",")]
    print("| model | rows in the batch | max abs diff | mean abs diff | rows whose argmax differs |")
    print("|---|---|---|---|---|")
    for path in a.models:
        for r in measure(path, rows, a.threads):
            print(f"| {r['model']} | {r['rows']} | {r['max_abs']} | {r['mean_abs']} | {r['argmax_differs']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
