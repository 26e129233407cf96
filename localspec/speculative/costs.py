"""What a target pass costs on this machine, as a function of batch size and logit rows.

Fitted from real decodes (a short calibration, then every verify pass), so the speedup estimate and the
adaptive draft length use measured costs, not guesses.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the policy's fast tests use a CostModel without loading llama.cpp
    from localspec.runtime.context import Context


class CostModel:
    def __init__(self, window: int = 128):
        self._obs: deque[tuple[int, int, float]] = deque(maxlen=window)
        self._coef: np.ndarray | None = None
        self._dirty = 0
        self._single: float | None = None  # single_token_s, until the next observation

    def observe(self, n_tokens: int, n_rows: int, seconds: float) -> None:
        self._obs.append((n_tokens, n_rows, seconds))
        self._single = None
        self._dirty += 1
        if self._coef is None or self._dirty >= 8:
            self._fit()

    def _fit(self) -> None:
        """Least squares over the median time of each (tokens, rows) shape, weighted by how often it was seen:
        a few passes stalled by other processes (seconds instead of milliseconds) must not skew the fit."""
        self._dirty = 0
        self._single = None  # without single steps observed, it comes from the fit
        groups: dict[tuple[int, int], list[float]] = {}
        for n, r, s in self._obs:
            groups.setdefault((n, r), []).append(s)
        if len({n for n, _ in groups}) < 2:
            return
        keys = list(groups)
        w = np.sqrt([len(groups[k]) for k in keys])
        a = np.array([[1.0, n, r] for n, r in keys]) * w[:, None]
        y = np.array([float(np.median(groups[k])) for k in keys]) * w
        coef, *_ = np.linalg.lstsq(a, y, rcond=None)
        self._coef = np.maximum(coef, 0.0)

    @property
    def ready(self) -> bool:
        return self._coef is not None

    def coefficients(self) -> tuple[float, float, float] | None:
        """(seconds per pass, per token, per logits row) of the fit, or None before there is one."""
        return None if self._coef is None else tuple(float(c) for c in self._coef)

    def single_token_s(self) -> float:
        """One plain decoding step (1 token, 1 logit row): measured directly, since a line fit is loose at n=1.
        Kept until the next observation: the drafter asks several times per proposal."""
        if self._single is None:
            ones = sorted(s for n, r, s in self._obs if n == 1 and r == 1)
            self._single = ones[len(ones) // 2] if ones else self.cost(1, 1)
        return self._single

    def cost(self, n_tokens: int, n_rows: int | None = None) -> float:
        """Seconds for one decode of `n_tokens` asking logits for `n_rows` of them (default: all)."""
        rows = n_tokens if n_rows is None else n_rows
        if self._coef is None:
            return 0.0
        c = self._coef
        return float(c[0] + c[1] * n_tokens + c[2] * rows)

    def calibrate(self, ctx: Context, sizes=((1, 1), (1, 1), (1, 1), (4, 4), (8, 8), (16, 16), (16, 1)), repeats: int = 1):
        """Time a few throwaway decodes on top of the current cache, then roll them back."""
        base = ctx.n_past
        sizes = [(n, r) for n, r in sizes if n <= ctx.n_batch]
        if not sizes or base + max(n for n, _ in sizes) >= ctx.n_ctx or base == 0:
            return
        filler = ctx.tokens[-1]
        for _ in range(repeats):
            for n, rows in sizes:
                flags = [False] * (n - rows) + [True] * rows
                t0 = time.perf_counter()
                ctx.decode([filler] * n, flags)
                self.observe(n, rows, time.perf_counter() - t0)
                ctx.truncate(base)
        self._fit()
