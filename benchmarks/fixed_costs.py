"""Pass costs pinned to one measurement, for comparing drafting policies by tokens per pass.

The hybrid cuts each draft where its expected gain peaks, priced by what passes cost on this machine as measured
during the run (speculative/costs.py). On a CPU shared with other jobs those prices swing (a fit of 140 ms per
row against a 38 ms step was seen while a compiler ran), and the drafts, hence the tokens per pass, swing with them.
Pinning the prices to one measurement taken on a quiet machine makes a run's tokens per pass a function of the
drafting code alone (greedy F16 output is fixed), so two commits compare exactly.

    python benchmarks/fixed_costs.py --target TARGET.gguf [--out benchmarks/cpu_costs.json]

times the shapes verification uses (medians of many repeats at a context depth of 1,000 tokens) and records the
fitted (fixed cost per pass, per row, per logits row) and the single step, in milliseconds, under the target's
file name. `FixedCosts.for_target(path)` reads them back (None when the file has no entry for that target).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localspec.speculative.costs import CostModel  # noqa: E402

COSTS_FILE = Path(__file__).resolve().parent / "cpu_costs.json"
# An H200 running an 8B (llama-3 shape, Q4_0) target: a pass of k rows against one single-token step, steady state
# (../shared/gpu/README.md, llama-bench best of 3; CUDA graphs serve single steps only).
H200_8B_CURVE = ((1, 1.0), (2, 0.92), (4, 1.11), (8, 1.54), (16, 1.82), (32, 2.22), (64, 2.89))
H200_8B_STEP_S = 3.84e-3


def curve_steps(rows: int, curve=H200_8B_CURVE) -> float:
    """A pass of `rows` rows in single steps, interpolated on the curve (beyond its end, its last slope)."""
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if rows <= x1:
            return y0 + (y1 - y0) * (rows - x0) / (x1 - x0)
    (x0, y0), (x1, y1) = curve[-2:]
    return y1 + (y1 - y0) * (rows - x1) / (x1 - x0)


def h200_costs() -> "FixedCosts":
    """The policy priced as on the H200 (a line through the curve: what the hybrid's cut reads; logits rows free)."""
    (x0, y0), (x1, y1) = H200_8B_CURVE[0], H200_8B_CURVE[-1]
    c1 = (y1 - y0) / (x1 - x0) * H200_8B_STEP_S
    return FixedCosts(H200_8B_STEP_S - c1, c1, 0.0, H200_8B_STEP_S)
SHAPES = ((1, 1), (2, 2), (4, 4), (8, 8), (16, 16), (32, 32), (16, 1), (32, 1), (64, 1))


class FixedCosts(CostModel):
    """A CostModel whose prices never move: what the policy reads (coefficients, single step, cost of a shape) is
    the recorded measurement; observations are ignored and there is nothing to calibrate."""

    def __init__(self, c0: float, c1: float, c2: float, step: float):
        super().__init__()
        self._fixed = (c0, c1, c2)
        self._step = step

    @classmethod
    def for_target(cls, target: str, path: Path = COSTS_FILE) -> "FixedCosts | None":
        table = json.loads(path.read_text()) if path.exists() else {}
        row = table.get(Path(target).name)
        if row is None:
            return None
        return cls(row["c0_ms"] / 1e3, row["c1_ms"] / 1e3, row["c2_ms"] / 1e3, row["step_ms"] / 1e3)

    def observe(self, n_tokens: int, n_rows: int, seconds: float, depth: int | None = None) -> None:
        pass

    @property
    def ready(self) -> bool:
        return True

    def coefficients(self):
        return self._fixed

    def single_token_s(self) -> float:
        return self._step

    def cost(self, n_tokens: int, n_rows: int | None = None) -> float:
        c0, c1, c2 = self._fixed
        return c0 + c1 * n_tokens + c2 * (n_tokens if n_rows is None else n_rows)

    def calibrate(self, ctx, *args, **kw) -> None:
        pass

    # The row-count curve some versions of CostModel price passes by, from the same line.
    def pass_s(self, rows: int, logit_rows: int | None = None) -> float:
        return self.cost(rows, logit_rows)

    def marginal_row_s(self, k: int) -> float:
        return self.cost(k, k) - self.cost(k - 1, k - 1) if k >= 2 else self._step

    @property
    def measured(self):
        return self


def measure(target: str, repeats: int = 9, depth: int = 1000) -> dict:
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.pair import load_pair

    pair = load_pair(target, None, ctx=ContextSettings(n_ctx=4096))
    ctx = pair.target_ctx
    ctx.prefill([pair.target.tokenize("warm up " * 400)[5]] * depth)
    base = ctx.n_past
    times: dict[tuple[int, int], list[float]] = {s: [] for s in SHAPES}
    for _ in range(repeats):
        for n, rows in SHAPES:
            flags = [False] * (n - rows) + [True] * rows
            t0 = time.perf_counter()
            ctx.decode([ctx.tokens[-1]] * n, flags)
            times[(n, rows)].append(time.perf_counter() - t0)
            ctx.truncate(base)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    fit = CostModel()
    for (n, r), s in med.items():
        fit.observe(n, r, s)
    c0, c1, c2 = fit.coefficients()
    step = med[(1, 1)]
    return {"step_ms": round(step * 1e3, 3), "c0_ms": round(max(step - c1 - c2, 0.2 * step) * 1e3, 3),
            "c1_ms": round(c1 * 1e3, 3), "c2_ms": round(c2 * 1e3, 3),
            "medians_ms": {f"{n}x{r}": round(s * 1e3, 3) for (n, r), s in med.items()}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True)
    p.add_argument("--out", default=str(COSTS_FILE))
    p.add_argument("--repeats", type=int, default=9)
    a = p.parse_args(argv)
    row = measure(a.target, a.repeats)
    out = Path(a.out)
    table = json.loads(out.read_text()) if out.exists() else {}
    table[Path(a.target).name] = row
    out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
