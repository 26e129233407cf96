"""The source gate: lookups that cost more than they save sit out (HybridDrafter asks it at every proposal)."""

from __future__ import annotations

# A source's lookups cost time at every step whether or not it proposes anything. Over each window of this many
# proposals its lookup time is set against the passes its accepted tokens saved; one that cost more sits out the
# next window (then it is tried again: the text may have started to repeat). In prose the window is shorter and a
# source that keeps failing sits out twice as long each time (up to PROSE_REST_MAX proposals): a story that does
# not repeat itself should not pay for a lookup every few dozen tokens.
# A lookup that costs less than this share of the window's decoding time is not worth resting whatever it saves: a
# source that keeps generations from earlier requests costs microseconds a step and must be there when a request
# repeats (resting it for up to PROSE_REST_MAX proposals after a first request that did not repeat lost exactly
# that: the same request twice to `serve` ran 54.8 and 56.1 tok/s).
MIN_COST_SHARE = 0.01
GATE_WINDOW = 48
PROSE_WINDOW = 16
PROSE_REST_MAX = 1024


class SourceGate:
    """The accounts of the sources' lookups, for prose or for text under a grammar (apart: a source that pays in
    tool calls may cost in the prose around them). Under a grammar only a source whose guesses were drafted and
    judged can be rested: where the cut let nothing through (rows as costly as a step on a busy machine) no source
    had its chance, and a source that speaks at one place only (which tool) must be there when a call starts. In
    prose every lookup that saved less than it cost is rested: there it is pure cost."""

    def __init__(self, prose: bool):
        self.prose = prose
        self.window = PROSE_WINDOW if prose else GATE_WINDOW
        self.lookup_s: dict[str, float] = {}  # per source key, this window: time spent in candidate()
        self.saved: dict[str, int] = {}  # ... and its tokens accepted (each saved a target pass)
        self.drafted: dict[str, int] = {}  # ... and its tokens drafted (sent to the target to judge)
        self.asked = 0  # proposals in this window
        self.rest: dict[str, int] = {}  # source key -> proposals it still sits out
        self.fails: dict[str, int] = {}  # source key -> windows in a row it ran and did not pay

    def label(self, key: str) -> str:
        return key + " (prose)" if self.prose else key

    def rest_for(self, key: str) -> int:
        """How long a source that did not pay now sits out."""
        if not self.prose:
            return self.window
        fails = self.fails[key] = self.fails.get(key, 0) + 1
        return min(self.window << fails, PROSE_REST_MAX)
