"""What a target pass costs on this machine, by its number of rows (a curve) and of logits rows.

Measured from real decodes (a calibration in steady state, then every verify pass), so the speedup estimate and the
adaptive draft length use measured costs, not guesses.

Why a curve and not a line: a pass of k rows does not cost a fixed amount per row. On an H200 (8B shape) a pass of
k rows costs 0.92x a single-token step at k=2, 1.11x at 4, 1.54x at 8, 1.82x at 16, 2.22x at 32 and 2.89x at 64
(CUDA graphs serve single steps only; kernels switch at 16 rows); on a 2-core CPU each row adds 15-27% of a step.
So each row count is priced by the median of its own recent timings, interpolated between the counts measured.
What logits rows add (their output layer, and copying them to the host) is fitted on top: a line
c0 + c1 * rows + c2 * logits rows over every shape seen, whose c2 prices each logits row beyond the first.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from localspec.runtime.timing import steady_state
from localspec.speculative.depth_scale import DepthScale
from localspec.speculative.fit import interpolate, least_squares, weighted_median

if TYPE_CHECKING:  # the policy's fast tests use a CostModel without loading llama.cpp
    from localspec.runtime.context import Context

# The shapes verification uses, timed by calibrate(): single steps, drafts of growing length with logits for every
# row, and a long pass where only the last row needs logits (forced tokens of a grammar).
CALIBRATION = ((1, 1), (1, 1), (2, 2), (4, 4), (8, 8), (16, 16), (32, 32), (16, 1))
REFIT_EVERY = 8  # observations between refits: a fit costs well under a millisecond, a pass several


@dataclass(frozen=True)
class PassCurve:
    """A pass's price by its row count: measured row counts, each one's seconds with one logits row (what
    llama-bench's `pp k` times), and what each logits row beyond the first adds."""

    rows: tuple[int, ...]  # ascending, at least two
    seconds: tuple[float, ...]
    logits_row_s: float = 0.0

    def pass_s(self, rows: int, logit_rows: int | None = None) -> float:
        """Seconds for one pass of `rows` tokens asking logits for `logit_rows` of them (default: all). Between
        measured row counts, linear; beyond the largest, its last segment's slope (never falling)."""
        xs, ys = self.rows, self.seconds
        lr = rows if logit_rows is None else logit_rows
        if rows > xs[-1]:
            slope = max((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]), 0.0)
            base = ys[-1] + slope * (rows - xs[-1])
        else:
            base = interpolate(xs, ys, rows)
        return max(base + self.logits_row_s * (lr - 1), 0.0)

    def marginal_row_s(self, k: int) -> float:
        """What the k-th row of a pass adds, its logits included (k >= 2; never negative: a pass of 2 rows can
        cost less than a single step on a GPU, which buys no row for free)."""
        return max(self.pass_s(k, k) - self.pass_s(k - 1, k - 1), 0.0)


class PassPrices(Protocol):
    """What the engine and the drafting policy ask of their prices: a CostModel (this machine's), or a CostProfile
    pricing another machine's passes (speculative/profile.py)."""

    @property
    def measured(self) -> CostModel: ...  # this machine's own figures, whatever prices the policy

    def observe(self, n_tokens: int, n_rows: int, seconds: float, depth: int | None = None) -> None: ...

    def coefficients(self) -> tuple[float, float, float] | None: ...

    def single_token_s(self) -> float: ...

    def cost(self, n_tokens: int, n_rows: int | None = None) -> float: ...


class CostModel:
    def __init__(self, window: int = 32):
        # Each (rows, logits rows) shape keeps its latest `window` timings: the run keeps re-pricing the shapes it
        # uses, and a shape it stopped using keeps its last prices instead of being crowded out by the others.
        self._window = window
        self._shapes: dict[tuple[int, int], deque[float]] = {}
        self._medians: dict[tuple[int, int], float] = {}
        self._stale: set[tuple[int, int]] = set()
        self._coef: tuple[float, float, float] | None = None
        self._curve: PassCurve | None = None
        self._dirty = 0
        self._single: float | None = None  # single_token_s, until the next observation
        # The curve's rows were priced at the calibration depth; far from it they are scaled (depth_scale.py), and
        # the curve keeps the single step timed there (the live one follows the depth, as `single_token_s`).
        self.depth = DepthScale()
        self._base_single: float | None = None

    # -- what the run measures ----------------------------------------------------------------------------------
    def observe(self, n_tokens: int, n_rows: int, seconds: float, depth: int | None = None) -> None:
        """One pass of `n_tokens` rows, `n_rows` of them with logits, took `seconds` on a cache of `depth` tokens
        (None: not said, priced as if at the calibration depth)."""
        if depth is not None:
            self.depth.depth = depth
            if n_tokens > 1 and self.depth.far(depth) and self._curve is not None:
                # Its rows teach how rows grow with depth; mixed into the calibration's timings they would bend the
                # curve by wherever the latest drafts happened to run.
                self.depth.learn(depth, seconds - self.single_token_s(), self._base_pass_s(n_tokens, n_rows))
                return
        key = (n_tokens, n_rows)
        times = self._shapes.get(key)
        if times is None:
            times = self._shapes[key] = deque(maxlen=self._window)
        times.append(seconds)
        self._stale.add(key)
        self._single = None
        self._dirty += 1
        if self._coef is None or self._dirty >= REFIT_EVERY:
            self._fit()

    def keep_latest(self, n_tokens: int, n_rows: int) -> None:
        """Forget every timing of this shape but the latest: a measurement taken anew on purpose replaces what was
        known (a draft model priced out by a first price taken before the machine settled: model_price.py)."""
        times = self._shapes.get((n_tokens, n_rows))
        if times:
            latest = times[-1]
            times.clear()
            times.append(latest)
            self._stale.add((n_tokens, n_rows))
            self._single = None
            self._fit()

    def _fit(self) -> None:
        """Re-price from the medians of each shape's recent timings (a few passes stalled by other processes,
        seconds instead of milliseconds, must not move the prices), each shape weighted by how often it was seen."""
        self._dirty = 0
        self._single = None
        for key in self._stale:
            times = sorted(self._shapes[key])
            self._medians[key] = times[len(times) // 2]
        self._stale.clear()
        keys = list(self._medians)
        if len({n for n, _ in keys}) < 2:
            return
        weights = [len(self._shapes[k]) ** 0.5 for k in keys]
        y = [self._base_single if k == (1, 1) and self._base_single is not None else self._medians[k] for k in keys]
        if len({r for _, r in keys}) > 1:
            coef = least_squares([(1.0, n, r) for n, r in keys], y, weights)
        else:  # one logits-row count throughout: nothing tells a logits row's price apart from the pass's
            coef = least_squares([(1.0, n) for n, _ in keys], y, weights) + [0.0]
        c0, c1, c2 = (max(c, 0.0) for c in coef)
        self._coef = (c0, c1, c2)
        # The curve: each row count's pass with one logits row (what llama-bench's `pp k` times), from every shape
        # of that row count, the logits rows beyond the first taken off at c2 each.
        by_rows: dict[int, tuple[list[float], list[float]]] = {}
        for k, w, v in zip(keys, weights, y):
            vals, ws = by_rows.setdefault(k[0], ([], []))
            vals.append(v - c2 * (k[1] - 1))
            ws.append(w * w)
        xs = sorted(by_rows)
        self._curve = PassCurve(tuple(xs), tuple(max(weighted_median(*by_rows[n]), 0.0) for n in xs), c2)

    # -- prices ---------------------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._coef is not None

    def coefficients(self) -> tuple[float, float, float] | None:
        """(seconds per pass, per token, per logits row) of the line fit, or None before there is one; the rows'
        prices at the latest depth (depth_scale.py)."""
        if self._coef is None or self._base_single is None:
            return self._coef
        c0, c1, c2 = self._coef
        f = self.depth.factor()
        return c0, c1 * f, c2 * f

    def pass_s(self, rows: int, logit_rows: int | None = None) -> float:
        """Seconds for one pass of `rows` tokens asking logits for `logit_rows` of them (default: all); 0.0 before
        anything is measured (PassCurve.pass_s)."""
        if self._curve is None:
            return 0.0
        at_base = self._curve.pass_s(rows, logit_rows)
        if self._base_single is None:
            return at_base
        # Today's step (its timings follow the depth), and what the rest adds at calibration depth, scaled to here.
        return self.single_token_s() + self.depth.factor() * max(at_base - self._base_single, 0.0)

    def _base_pass_s(self, rows: int, logit_rows: int) -> float:
        """What a pass adds to a single step at the calibration depth."""
        return self._curve.pass_s(rows, logit_rows) - (self._base_single or 0.0) if self._curve is not None else 0.0

    def marginal_row_s(self, k: int) -> float:
        """What the k-th row of a pass adds, its logits included (k >= 2; never negative: a pass of 2 rows can cost
        less than a single step on a GPU, which buys no row for free); for k = 1, a step."""
        if k < 2 or self._curve is None:
            return self.single_token_s() if k < 2 else 0.0
        return max(self.pass_s(k, k) - self.pass_s(k - 1, k - 1), 0.0)

    def pass_curve(self) -> list[tuple[int, float]]:
        """[(rows, seconds for a pass of that many rows with one logits row)] at the latest depth (for reports)."""
        return [(n, self.pass_s(n, 1)) for n in self._curve.rows] if self._curve is not None else []

    def single_token_s(self) -> float:
        """One plain decoding step (1 token, 1 logit row): its own median. Kept until the next observation: the
        drafter asks several times per proposal."""
        if self._single is None:
            ones = self._shapes.get((1, 1))
            if ones:
                self._single = sorted(ones)[len(ones) // 2]
            else:
                self._single = self._curve.pass_s(1, 1) if self._curve is not None else 0.0
        return self._single

    def cost(self, n_tokens: int, n_rows: int | None = None) -> float:
        """Seconds for one decode of `n_tokens` asking logits for `n_rows` of them (default: all)."""
        return self.pass_s(n_tokens, n_rows)

    @property
    def measured(self) -> CostModel:
        """The model of what this machine's passes cost (itself; a CostProfile prices passes for another machine
        and keeps one of these for this machine's own figures)."""
        return self

    # -- steady state -----------------------------------------------------------------------------------------
    def calibrate(self, ctx: Context, sizes=CALIBRATION, repeats: int = 2, warm_steps: int = 12):
        """Price the shapes verification uses, in steady state, on top of the current cache, rolled back after.

        Steady state first: a GPU backend captures its graphs for single steps only after the first few calls and
        allocates for each new batch shape, so the first timings of a fresh context can cost twice the later ones
        (issue 25: a draft model priced at load at 5x llama-bench's step). So every shape runs once untimed, then
        single steps until three in a row agree within 10% (at most `warm_steps`), then every shape is timed
        `repeats` times; the prices are the medians."""
        base = ctx.n_past
        sizes = [(n, r) for n, r in sizes if n <= ctx.n_batch and base + n < ctx.n_ctx]
        if not sizes or base == 0:
            return
        filler = ctx.tokens[-1]

        def once(n: int, rows: int) -> float:
            flags = [False] * (n - rows) + [True] * rows
            t0 = time.perf_counter()
            ctx.decode([filler] * n, flags)
            spent = time.perf_counter() - t0
            ctx.truncate(base)
            return spent

        for n, rows in dict.fromkeys(sizes):
            once(n, rows)
        steady_state(lambda: once(1, 1), warm_steps)
        singles = []
        for _ in range(repeats):
            for n, rows in sizes:
                spent = once(n, rows)
                self.observe(n, rows, spent)
                if (n, rows) == (1, 1):
                    singles.append(spent)
        if singles:
            self.calibrated_at(base, sorted(singles)[len(singles) // 2])
        self._fit()

    def calibrated_at(self, depth: int, single_s: float) -> None:
        """The curve's timings were taken on a cache of `depth` tokens, where a single step took `single_s`: from
        now on the rows are priced at the latest pass's depth (depth_scale.py)."""
        self._base_single = single_s
        self.depth.calibrated_at(depth)
        self._stale.update(self._shapes)
        self._fit()

