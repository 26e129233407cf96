"""How a pass's extra rows grow with the context under them (issue 34).

The pass curve is calibrated once, on a short cache (at load, so the first reply is not held back). Each extra row
of a pass attends over the whole context, so deeper in a context it costs more: SmolLM2-135M F16 on this 2-core CPU
adds 1.6 ms a row on 60 tokens of context and 3.2 ms on 1,205 (the tool definitions of `run --tools`), while its
single step goes from 9.4 to 14.6 ms. Priced at the calibration depth, rows there looked three times cheaper than
they were, and prose lookups whose guesses were right one time in six kept drafting 10-row passes (0.83-0.90x of
target-only). Single steps are priced by their own recent timings, which follow the depth; here the rest of the
curve follows it too: a row's price at calibration depth times 1 + slope * (depth - calibration depth), the slope
learned from the verify passes run far from that depth (their extra over a step against the curve's), a median of
the latest, so a pass stalled by another process does not move it. Before any such pass the slope is 0 (the curve
as calibrated): the first drafted pass at a new depth teaches it, and it holds for every depth after.
"""

from __future__ import annotations

from collections import deque

DEPTH_GAP = 128  # tokens from the calibration depth before a pass is judged by its depth (noise decides nearer)
WINDOW = 16  # slope estimates kept
FACTOR_RANGE = (0.25, 8.0)  # a pass stalled or raced by another process must not price rows absurdly


class DepthScale:
    """The factor on a pass's extra rows at a context depth, learned from passes measured there."""

    def __init__(self, window: int = WINDOW):
        self.base: int | None = None  # the depth the curve was calibrated at (None: not calibrated, no scaling)
        self.depth = 0  # the latest pass's depth
        self._slopes: deque[float] = deque(maxlen=window)
        self._slope: float | None = None  # their median, kept on learning: factor() is asked several times a step

    def calibrated_at(self, depth: int) -> None:
        self.base = depth

    def far(self, depth: int) -> bool:
        """Whether a pass at `depth` is too far from the calibration to be priced as one of its own."""
        return self.base is not None and abs(depth - self.base) >= DEPTH_GAP

    def learn(self, depth: int, extra_s: float, extra_at_base_s: float) -> None:
        """A pass at `depth` whose rows beyond the first took `extra_s` over a step there, against `extra_at_base_s`
        on the curve (the same shape at the calibration depth)."""
        if self.base is None or extra_at_base_s <= 0 or not self.far(depth):
            return
        lo, hi = FACTOR_RANGE
        ratio = min(max(extra_s / extra_at_base_s, lo), hi)
        self._slopes.append((ratio - 1.0) / (depth - self.base))
        slopes = sorted(self._slopes)
        self._slope = slopes[len(slopes) // 2]

    def factor(self, depth: int | None = None) -> float:
        """What a row at calibration depth costs here, as a multiple (1.0 before anything is learned)."""
        if self.base is None or self._slope is None:
            return 1.0
        d = self.depth if depth is None else depth
        lo, hi = FACTOR_RANGE
        return min(max(1.0 + self._slope * (d - self.base), lo), hi)
