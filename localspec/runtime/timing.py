"""Timing a decode in steady state (used to price the draft model at load and the target's passes).

Why: the first decodes of a fresh context cost more than the later ones: the weights are paged in, buffers are
allocated for each new batch shape, and a GPU backend captures its CUDA graphs for single steps only after the
first few calls. On an H200 a draft model timed on its second decode came out at 5x llama-bench's figure for it
(issue 25), and the drafting policy then switched it off for good.
"""

from __future__ import annotations

from typing import Callable


def steady_state(step: Callable[[], float], max_steps: int = 12, tolerance: float = 0.1) -> list[float]:
    """Run `step` (it returns its own seconds) until three timings in a row lie within `tolerance` of their median,
    or `max_steps` times; returns every timing (the steady ones last)."""
    times: list[float] = []
    while len(times) < max_steps:
        times.append(step())
        last = sorted(times[-3:])
        if len(last) == 3 and last[2] - last[0] <= tolerance * last[1]:
            break
    return times


def steady_median(times: list[float]) -> float:
    """The median of the last three timings (the steady ones), or of all there are."""
    last = sorted(times[-3:])
    return last[len(last) // 2]
