"""Sampling parameters and the filtered distributions used by both the target and the draft model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from localspec.speculative.constraint import Constraint


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0  # 0 means greedy
    top_k: int = 40  # 0 disables
    top_p: float = 0.95  # 1 disables
    min_p: float = 0.05  # 0 disables
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


@dataclass
class Dist:
    """A sparse distribution: token ids and their probabilities (summing to 1), highest first."""

    ids: np.ndarray
    probs: np.ndarray

    def prob(self, token: int) -> float:
        hit = np.flatnonzero(self.ids == token)
        return float(self.probs[hit[0]]) if hit.size else 0.0

    def sample(self, rng: np.random.Generator) -> int:
        return int(self.ids[min(int(np.searchsorted(np.cumsum(self.probs), rng.random(), side="right")),
                                len(self.ids) - 1)])


def masked_argmax(logits: np.ndarray, allowed: np.ndarray | None) -> int:
    """Greedy choice, restricted to the tokens a grammar allows (bool mask over the vocabulary)."""
    if allowed is None:
        return int(np.argmax(logits))
    return int(np.argmax(np.where(allowed, logits, -np.inf)))


def constrained_argmax(logits: np.ndarray, constraint: Constraint | None) -> int:
    """Greedy choice under a grammar. The global argmax is almost always allowed, and checking one token is far
    cheaper than building a vocabulary-wide mask (262k entries for Gemma), so the mask is the fallback."""
    best = int(np.argmax(logits))
    if constraint is None or constraint.is_allowed(best):
        return best
    return masked_argmax(logits, constraint.allowed())


def top_pick(ids: Sequence[int], logits: Sequence[float], allowed: Callable[[int], bool] | None = None) -> int | None:
    """The greedy choice from a row's best tokens alone (ids and logits sorted highest first, equal logits by id:
    runtime Context.top), restricted to what `allowed` accepts; None where they cannot tell it and the whole row
    must: no candidate is allowed, or the one found ties with the lowest candidate logit (a token left out of the
    candidates may have that logit too, and a lower id, which the whole row's argmax would pick). Every token with a
    logit above the lowest candidate's is among the candidates, so any other answer is the whole row's argmax."""
    if not ids:
        return None
    lowest = logits[-1]
    for tok, logit in zip(ids, logits):
        if allowed is None or allowed(tok):
            return tok if logit > lowest else None
    return None


def top_prob(logits: np.ndarray, token: int) -> float:
    """Softmax probability of `token` (the draft's confidence, compared with p_min). In float32 and in place: this
    runs for every drafted token over the whole vocabulary, and float64 doubles its cost for no useful precision."""
    e = logits - logits[token]
    np.exp(e, out=e)
    return float(1.0 / e.sum())


def filtered_dist(logits: np.ndarray, params: SamplingParams, allowed: np.ndarray | None = None) -> Dist:
    """Temperature, then top-k, top-p and min-p, in llama.cpp's order; the same for target p and draft q."""
    if allowed is not None:
        logits = np.where(allowed, logits, -np.inf)
    n = logits.shape[0]
    k = params.top_k if 0 < params.top_k < n else n
    if k < n:
        ids = np.argpartition(logits, n - k)[n - k:]
    else:
        ids = np.arange(n)
    sub = logits[ids].astype(np.float64) / max(params.temperature, 1e-6)
    order = np.argsort(-sub, kind="stable")
    ids, sub = ids[order], sub[order]
    finite = np.isfinite(sub)
    ids, sub = ids[finite], sub[finite]
    probs = np.exp(sub - sub[0])
    probs /= probs.sum()
    keep = len(probs)
    if params.top_p < 1.0:
        keep = min(keep, int(np.searchsorted(np.cumsum(probs), params.top_p, side="left")) + 1)
    if params.min_p > 0.0:
        keep = min(keep, max(1, int(np.count_nonzero(probs >= params.min_p * probs[0]))))
    ids, probs = ids[:keep], probs[:keep]
    return Dist(ids, probs / probs.sum())


def residual(p: Dist, q: Dist | None, drafted: int) -> Dist:
    """Normalised max(0, p - q): where to resample after rejecting a draft. q=None is a point mass on `drafted`."""
    if q is None:
        keep = p.ids != drafted
        ids, probs = p.ids[keep], p.probs[keep]
    else:
        q_on_p = np.array([q.prob(int(t)) for t in p.ids]) if len(q.ids) < 64 else _lookup(q, p.ids)
        probs = np.maximum(p.probs - q_on_p, 0.0)
        ids = p.ids
        nz = probs > 0
        ids, probs = ids[nz], probs[nz]
    if probs.size == 0 or probs.sum() <= 0:  # p == q exactly: any sample from p is correct
        return p
    return Dist(ids, probs / probs.sum())


def _lookup(q: Dist, ids: np.ndarray) -> np.ndarray:
    order = np.argsort(q.ids)
    sorted_ids = q.ids[order]
    pos = np.clip(np.searchsorted(sorted_ids, ids), 0, len(sorted_ids) - 1)
    hit = sorted_ids[pos] == ids
    return np.where(hit, q.probs[order][pos], 0.0)
