"""The live statistics panel (Textual widget): speculation figures, per-drafter counts, a sparkline, totals."""

from __future__ import annotations

import time
from collections import deque

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Sparkline, Static

from localspec.tui.livestats import SessionView, StatsView, slow_hint, summary_line
from localspec.tui.origins import LABELS, colour, legend

SPARK_POINTS = 40


def _grid() -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(style="dim")
    t.add_column(justify="right")
    return t


def turn_table(v: StatsView | None) -> Table:
    t = _grid()
    if v is None:
        t.add_row("no generation yet", "")
        return t
    t.add_row("acceptance", v.acceptance_text)
    t.add_row("tokens / pass", f"{v.mean_accepted_length:.2f}" if v.target_passes else "–")
    t.add_row("tokens / s", f"{v.tokens_per_second:.1f}")
    t.add_row("est. speedup", v.speedup_text)
    t.add_row("tokens", f"{v.generated} in {v.target_passes} passes" if v.target_passes else str(v.generated))
    if v.first_token_s is not None:
        cached = f" ({v.reused_prefix_tokens:,} cached)" if v.reused_prefix_tokens else ""
        t.add_row("first token", f"{v.first_token_s:.2f} s{cached}")
    if v.draft_translated:
        t.add_row("draft model", "translated")  # another tokenizer: its text is tokenized again
    if v.source:
        t.add_row("measured by", v.source)
    if v.finish_reason:
        t.add_row("finished", v.finish_reason)
    return t


def switched_off_text(v: StatsView | None) -> str | None:
    """Drafters resting for now and why, under the drafter table (None: every drafter is on)."""
    if v is None or not v.switched_off:
        return None
    return "\n".join(f"{LABELS.get(n, n)} off: {why}" for n, why in sorted(v.switched_off.items()))


def drafter_table(v: StatsView | None) -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(min_width=12)
    t.add_column(justify="right")
    t.add_column(justify="right")
    t.add_row(Text("drafter", style="dim"), Text("drafted", style="dim"), Text("accepted", style="dim"))
    for name, (drafted, accepted) in sorted((v.drafters if v else {}).items()):
        t.add_row(Text(LABELS.get(name, name), style=colour(name)), str(drafted), str(accepted))
    if not v or not v.drafters:
        t.add_row(Text("none yet" if v is None else "nothing drafted", style="dim"), "", "")
    return t


def totals_table(s: SessionView) -> Table:
    t = _grid()
    t.add_row("turns", str(s.turns))
    t.add_row("tokens", str(s.generated))
    t.add_row("acceptance", f"{100 * s.acceptance_rate:.1f}%" if s.drafted else "–")
    t.add_row("tokens / pass", f"{s.mean_accepted_length:.2f}" if s.target_passes else "–")
    t.add_row("tokens / s", f"{s.tokens_per_second:.1f}")
    return t


class StatsPanel(VerticalScroll):
    """Figures may arrive 16 times a second; the panel redraws at most every `REDRAW_S` (each redraw re-lays out
    the screen) and always for a final figure."""

    REDRAW_S = 0.25

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view: StatsView | None = None
        self.totals = SessionView()
        self.rates: deque[float] = deque(maxlen=SPARK_POINTS)
        self._drawn = 0.0
        self._pending = False
        self._hint: str | None = None
        self._off: str | None = None
        self.summary: Static | None = None  # the one-line form shown instead of the panel (narrow terminals)

    def compose(self) -> ComposeResult:
        yield Label("This turn", classes="heading")
        yield Static(turn_table(None), id="turn-stats")
        yield Static("", id="slow-hint")
        yield Static(drafter_table(None), id="drafter-stats")
        yield Static("", id="switched-off")
        yield Label("tokens / s", classes="heading")
        yield Sparkline([], id="spark")
        yield Label("Session", classes="heading")
        yield Static(totals_table(self.totals), id="totals")
        yield Label("Token origins", classes="heading")
        yield Static(legend(), id="legend")

    def show(self, view: StatsView | None, rate: float | None = None, *, final: bool = False) -> None:
        if view is not None:
            self.view = view
        if rate is not None:
            self.rates.append(rate)
        now = time.monotonic()
        if final or now - self._drawn >= self.REDRAW_S:
            self._redraw(now)
        elif not self._pending:  # draw the latest figures soon, even if no further update arrives
            self._pending = True
            self.set_timer(self.REDRAW_S, lambda: self._redraw(time.monotonic()))

    def _redraw(self, now: float) -> None:
        self._drawn, self._pending = now, False
        self.query_one("#turn-stats", Static).update(turn_table(self.view))
        hint = slow_hint(self.view)
        if hint != self._hint:  # each update re-lays out the panel: only when it changes
            self._hint = hint
            box = self.query_one("#slow-hint", Static)
            box.update(hint or "")
            box.display = hint is not None
        self.query_one("#drafter-stats", Static).update(drafter_table(self.view))
        off = switched_off_text(self.view)
        if off != self._off:
            self._off = off
            box = self.query_one("#switched-off", Static)
            box.update(off or "")
            box.display = off is not None
        self.query_one(Sparkline).data = list(self.rates)
        if self.summary is not None and self.summary.display:
            self.summary.update(summary_line(self.view, self.summary.size.width or None))

    def reset(self) -> None:
        """A new or reopened conversation: no turn of it has run here yet."""
        self.view = None
        self.rates.clear()
        if self.query("#turn-stats"):  # composed (else it draws from the empty view when it is)
            self._redraw(time.monotonic())

    def reading(self, done: int, total: int, rate: float | None) -> None:
        """The prompt is being read: say so where the turn's figures will be."""
        from localspec.turns.events import reading_text

        t = _grid()
        t.add_row(reading_text(done, total, rate), "")
        self.query_one("#turn-stats", Static).update(t)
        if self.summary is not None and self.summary.display:
            self.summary.update(reading_text(done, total, rate) + " · ^t panel")

    def show_totals(self, totals: SessionView) -> None:
        self.totals = totals
        for box in self.query("#totals").results(Static):  # none yet before the panel is composed: it reads
            box.update(totals_table(totals))  # self.totals then
