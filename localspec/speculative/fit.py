"""Small numeric helpers for the cost model, in plain Python.

Why not numpy.linalg: on a CUDA machine importing numpy's linear algebra before llama.cpp's libraries crashed model
loads (issue 25; native_first.py now orders the loads), and a 3-parameter fit needs none of it. Also: the fits here
run every few verify passes, where a few hundred Python operations cost microseconds.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Sequence


def weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    """The value at which half the weight lies on either side (the lower one at an exact split)."""
    pairs = sorted(zip(values, weights))
    half = sum(weights) / 2
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= half:
            return v
    return pairs[-1][0]


def _jacobi_eigen(m: list[list[float]]) -> tuple[list[float], list[list[float]]]:
    """Eigenvalues and eigenvectors (columns of the returned matrix) of a small symmetric matrix."""
    n = len(m)
    a = [row[:] for row in m]
    v = [[float(i == j) for j in range(n)] for i in range(n)]
    for _ in range(100):
        off = max((abs(a[i][j]), i, j) for i in range(n) for j in range(i + 1, n))
        if off[0] < 1e-300 or off[0] <= 1e-15 * max(abs(a[i][i]) for i in range(n)):
            break
        _, p, q = off
        theta = (a[q][q] - a[p][p]) / (2 * a[p][q])
        t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1))
        c = 1 / math.sqrt(t * t + 1)
        s = t * c
        for k in range(n):  # A <- A J
            akp, akq = a[k][p], a[k][q]
            a[k][p], a[k][q] = c * akp - s * akq, s * akp + c * akq
        for k in range(n):  # A <- J^T A
            apk, aqk = a[p][k], a[q][k]
            a[p][k], a[q][k] = c * apk - s * aqk, s * apk + c * aqk
        for k in range(n):
            vkp, vkq = v[k][p], v[k][q]
            v[k][p], v[k][q] = c * vkp - s * vkq, s * vkp + c * vkq
    return [a[i][i] for i in range(n)], v


def least_squares(rows: Sequence[Sequence[float]], y: Sequence[float], weights: Sequence[float] | None = None,
                  rcond: float = 1e-12) -> list[float]:
    """The minimum-norm weighted least-squares solution x of rows @ x ~ y (what numpy.linalg.lstsq gives), through
    the normal equations and a pseudo-inverse: where the columns are collinear (every pass asking logits for all
    its rows, so rows and logits rows move together), the collinear coefficients share the slope."""
    k = len(rows[0])
    w = weights or [1.0] * len(rows)
    ata = [[sum(wi * r[i] * r[j] for r, wi in zip(rows, w)) for j in range(k)] for i in range(k)]
    aty = [sum(wi * r[i] * yi for r, yi, wi in zip(rows, y, w)) for i in range(k)]
    vals, vecs = _jacobi_eigen(ata)
    top = max(abs(x) for x in vals) or 1.0
    x = [0.0] * k
    for e, lam in enumerate(vals):
        if abs(lam) <= rcond * top:
            continue
        proj = sum(vecs[i][e] * aty[i] for i in range(k)) / lam
        for i in range(k):
            x[i] += proj * vecs[i][e]
    return x


def interpolate(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Piecewise-linear through the points (xs ascending); beyond either end, the slope of the end segment."""
    if len(xs) == 1:
        return ys[0]
    i = bisect_left(xs, x)
    if i < len(xs) and xs[i] == x:
        return ys[i]
    i = min(max(i, 1), len(xs) - 1)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
