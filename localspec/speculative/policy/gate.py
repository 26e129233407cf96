"""The source gate: a source whose drafting costs more than it saves sits out (HybridDrafter asks it at every
proposal).

A source costs time at every step whether or not it proposes anything: its lookups (the draft model: its steps),
and every row it drafts into a verify pass, accepted or not. Over each window of proposals that is set against
the passes its accepted tokens saved; one that cost more sits out the next window, then is tried again. In prose
the window is shorter and a source that keeps failing sits out twice as long each time (up to PROSE_REST_MAX
proposals): a story that does not repeat itself should not pay for a lookup every few dozen tokens, nor for rows
of guesses (issue 34: the n-gram source drafted 72 prose tokens and 15 were accepted). A new generation is new text:
the lookup sources' rests end there (HybridDrafter.finish); the draft model's does not, since coming back costs it a
catch-up of everything it missed (policy/model_price.py decides that).
"""

from __future__ import annotations

from dataclasses import dataclass

# A lookup that costs less than this share of the window's decoding time is not worth resting whatever it saves: a
# source that keeps generations from earlier requests costs microseconds a step and must be there when a request
# repeats (resting it for up to PROSE_REST_MAX proposals after a first request that did not repeat lost exactly
# that: the same request twice to `serve` ran 54.8 and 56.1 tok/s).
MIN_COST_SHARE = 0.01
GATE_WINDOW = 48
PROSE_WINDOW = 8
PROSE_REST_MAX = 1024
MODEL = "model"  # the draft model's account (its key in the gate, as in the rates)


@dataclass
class Verdict:
    """One source's account at the end of a window: what it cost (lookups or steps, and its rows), what it saved,
    and how long it now sits out (0: it stays on)."""

    key: str
    spent_s: float
    saved_s: float
    drafted: int
    accepted: int
    rest: int


class SourceGate:
    """The accounts of the sources' lookups, for prose or for text under a grammar (apart: a source that pays in
    tool calls may cost in the prose around them). Under a grammar only a source whose guesses were drafted and
    judged can be rested: where the cut let nothing through (rows as costly as a step on a busy machine) no source
    had its chance, and a source that speaks at one place only (which tool) must be there when a call starts. In
    prose every source that saved less than it cost is rested: there it is pure cost."""

    def __init__(self, prose: bool):
        self.prose = prose
        self.window = PROSE_WINDOW if prose else GATE_WINDOW
        self.lookup_s: dict[str, float] = {}  # per source key, this window: time spent asking it
        self.saved: dict[str, int] = {}  # ... and its tokens accepted (each saved a target pass)
        self.drafted: dict[str, int] = {}  # ... and its tokens drafted (sent to the target to judge)
        self.asked = 0  # proposals in this window
        self.rest: dict[str, int] = {}  # source key -> proposals it still sits out
        self.fails: dict[str, int] = {}  # source key -> windows in a row it ran and did not pay

    def label(self, key: str) -> str:
        """How its notes name a source (the draft model's own price notes are under plain MODEL)."""
        if self.prose:
            return key + " (prose)"
        return key + " (in calls)" if key == MODEL else key

    def resting(self, key: str) -> bool:
        return self.rest.get(key, 0) > 0

    def spend(self, key: str, seconds: float) -> None:
        self.lookup_s[key] = self.lookup_s.get(key, 0.0) + seconds

    def count(self, accounts: dict[str, int], key: str) -> None:
        accounts[key] = accounts.get(key, 0) + 1

    def rest_for(self, key: str) -> int:
        """How long a source that did not pay now sits out."""
        if not self.prose:
            return self.window
        fails = self.fails[key] = self.fails.get(key, 0) + 1
        return min(self.window << fails, PROSE_REST_MAX)

    def tick(self, step_s: float, row_s: float) -> list[Verdict] | None:
        """One proposal: the rests run down, and at a window's end every source asked in it is judged (a target
        step of `step_s` and a drafted row of `row_s`); returns the verdicts then, None within a window."""
        for key, n in self.rest.items():
            self.rest[key] = n - 1
        self.asked += 1
        if self.asked < self.window:
            return None
        verdicts = []
        for key, lookups in self.lookup_s.items():
            drafted, accepted = self.drafted.get(key, 0), self.saved.get(key, 0)
            spent, saved = lookups + drafted * row_s, accepted * step_s
            rest = 0
            if step_s and spent - saved > MIN_COST_SHARE * self.asked * step_s and (self.prose or drafted):
                rest = self.rest[key] = self.rest_for(key)
            else:
                self.fails.pop(key, None)
            verdicts.append(Verdict(key, spent, saved, drafted, accepted, rest))
        self.asked, self.lookup_s, self.saved, self.drafted = 0, {}, {}, {}
        return verdicts

    def new_text(self) -> None:
        """A new generation: the lookup sources come back (its text may repeat where the last one did not); the
        draft model keeps its rest (see the module's docstring)."""
        for key in [k for k in self.rest if k != MODEL]:
            del self.rest[key]
            self.fails.pop(key, None)
