"""Plain, immutable views of speculative statistics for display (computed off the UI thread).

Why: the engine's Stats object is mutated by the generating thread; the UI only ever sees frozen copies. While a
generation runs, Stats.wall_s is not set yet, so rates come from the elapsed time measured here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from localspec.speculative import Stats

SLOW_AFTER_TOKENS = 24  # a reply this long has had enough drafted passes for the estimate to mean something
SLOW_AFTER_DRAFTED = 8  # ... and this many drafted tokens: the hint is about drafting, so some must have happened
SLOW_BELOW = 0.95  # the estimate's own noise is a few percent: below this, speculation costs


@dataclass(frozen=True)
class StatsView:
    generated: int = 0
    drafted: int = 0
    accepted: int = 0
    target_passes: int = 0
    acceptance_rate: float = 0.0
    mean_accepted_length: float = 0.0  # tokens per target pass
    tokens_per_second: float = 0.0
    estimated_speedup: float | None = None  # against target-only decoding; None: no data yet ("–")
    drafters: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (drafted, accepted)
    finish_reason: str = ""
    switched_off: dict[str, str] = field(default_factory=dict)  # drafters resting for now, and why
    source: str = ""  # who measured these figures: "" here, else the remote server (e.g. "llama-server")
    first_token_s: float | None = None  # the turn's wait for its first token (rendering and prefill included)
    reused_prefix_tokens: int = 0  # prompt tokens not computed for the turn (kept in the cache or restored)
    draft_translated: bool = False  # the draft model has another vocabulary: its text is tokenized again

    @classmethod
    def of(cls, stats: Stats, *, elapsed_s: float | None = None, target_token_s: float = 0.0,
           first_token_s: float | None = None) -> "StatsView":
        """A snapshot; elapsed_s (generation time so far) replaces the final timing while a generation runs."""
        drafters = {name: (d.drafted, d.accepted) for name, d in dict(stats.drafters).items()}
        if elapsed_s is None:
            tps, speedup = stats.tokens_per_second, stats.estimated_speedup
        else:  # the same estimate as the final one, from the costs measured so far
            tps = stats.generated_tokens / elapsed_s if elapsed_s > 0 else 0.0
            now = replace(stats, wall_s=stats.prefill_s + elapsed_s, target_token_s=target_token_s or stats.target_token_s)
            speedup = now.estimated_speedup
        return cls(stats.generated_tokens, stats.drafted, stats.accepted, stats.target_passes, stats.acceptance_rate,
                   stats.mean_accepted_length, tps, speedup, drafters, stats.finish_reason,
                   dict(stats.switched_off), stats.source,
                   first_token_s if first_token_s is not None else (stats.first_token_s or None),
                   stats.reused_prefix_tokens, stats.draft_translated)

    @property
    def acceptance_text(self) -> str:
        """Acceptance as shown: "–" when nothing was drafted (0 of 0 is no rate, not 0%)."""
        return f"{100 * self.acceptance_rate:.1f}%" if self.drafted else "–"

    @property
    def speedup_text(self) -> str:
        return "–" if self.estimated_speedup is None else f"{self.estimated_speedup:.2f}x"


@dataclass(frozen=True)
class SessionView:
    """Totals over every turn of the session (all pairs)."""

    turns: int = 0
    generated: int = 0
    drafted: int = 0
    accepted: int = 0
    target_passes: int = 0
    generation_s: float = 0.0

    def add(self, view: StatsView, generation_s: float) -> "SessionView":
        return SessionView(self.turns + 1, self.generated + view.generated, self.drafted + view.drafted,
                           self.accepted + view.accepted, self.target_passes + view.target_passes,
                           self.generation_s + generation_s)

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def mean_accepted_length(self) -> float:
        return self.generated / self.target_passes if self.target_passes else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.generated / self.generation_s if self.generation_s > 0 else 0.0


def stored_view(stats: dict) -> tuple[StatsView, float]:
    """A saved step's statistics (Stats.to_dict) as the panel counts them, with their generation time."""
    times = stats.get("time_s") or {}
    gen_s = max(float(stats.get("wall_s") or 0.0) - float(times.get("prefill") or 0.0), 0.0)
    return StatsView(generated=int(stats.get("generated_tokens") or 0), drafted=int(stats.get("drafted") or 0),
                     accepted=int(stats.get("accepted") or 0),
                     target_passes=int(stats.get("target_passes") or 0)), gen_s


class ExchangeTotals:
    """The session totals, kept per exchange of the conversation (a user message and the reply to it): an exchange
    deleted or written again takes its turn's figures with it, so the panel counts the turns that are shown."""

    def __init__(self) -> None:
        self._turns: list[list[tuple[StatsView, float]]] = []  # per exchange, in order: what its turns generated

    def answered(self, exchange: int, view: StatsView, generation_s: float) -> None:
        while len(self._turns) <= exchange:
            self._turns.append([])
        self._turns[exchange] = [(view, generation_s)]

    def drop_from(self, exchange: int) -> None:
        """The exchange and every one after it are gone (regenerate, edit and resend)."""
        del self._turns[exchange:]

    def drop(self, exchange: int) -> None:
        """One exchange is gone (delete)."""
        if exchange < len(self._turns):
            del self._turns[exchange]

    @classmethod
    def of_saved(cls, messages: list[dict], stats: list[dict | None]) -> "ExchangeTotals":
        """A reopened conversation's: each saved step's statistics ride on the message it wrote."""
        totals, exchange = cls(), -1
        for message, step in zip(messages, stats):
            if message.get("role") == "user":
                exchange += 1
                totals._turns.append([])
            elif step and exchange >= 0:
                totals._turns[exchange].append(stored_view(step))
        return totals

    @property
    def view(self) -> SessionView:
        total = SessionView()
        for steps in self._turns:
            if not steps:
                continue
            total = total.add(StatsView(generated=sum(v.generated for v, _ in steps),
                                        drafted=sum(v.drafted for v, _ in steps),
                                        accepted=sum(v.accepted for v, _ in steps),
                                        target_passes=sum(v.target_passes for v, _ in steps)),
                              sum(s for _, s in steps))
        return total


def slow_hint(view: StatsView | None) -> str | None:
    """What to try when speculation has measurably cost time in this reply, else None: only once something was
    drafted (with nothing drafted the reply ran as the target alone, 1.00x, and there is nothing to switch off),
    naming what drafted the most and was accepted the least."""
    if view is None or view.estimated_speedup is None or view.estimated_speedup >= SLOW_BELOW:
        return None
    if view.generated < SLOW_AFTER_TOKENS or view.drafted < SLOW_AFTER_DRAFTED:
        return None
    drafted = {n: d for n, d in view.drafters.items() if d[0]}
    worst = min(drafted, key=lambda n: (drafted[n][1] / drafted[n][0], -drafted[n][0])) if drafted else None
    if worst == "model":
        what = ("a smaller draft model, a lower draft_max, or no draft model (drafters.model = false in settings, "
                "F3: schema, history and n-gram drafting cost almost nothing)")
    elif worst is not None:
        what = f"switching the {worst} drafter off in settings (F3: drafters.{worst}), or a lower draft_max"
    else:
        what = "turning drafters off in settings (F3), or a lower draft_max"
    return f"speculation is slower than the target alone here ({view.estimated_speedup:.2f}x): try {what}"


def summary_line(view: StatsView | None, width: int | None = None) -> str:
    """The statistics panel folded into one line (narrow terminals), in `width` characters: the words grow shorter,
    and the rate goes, before anything is cut (the warnings stay: they say what to do)."""
    if view is None:
        return "no generation yet · ^t: statistics panel"
    accepted = f"{100 * view.acceptance_rate:.0f}%" if view.drafted else "–"
    slow = slow_hint(view) is not None
    off = f"off: {', '.join(sorted(view.switched_off))}" if view.switched_off else ""
    counted = f"{len(view.switched_off)} drafting off" if view.switched_off else ""  # the panel names them
    tokens, per_pass = f"{view.generated} tok", f"{view.mean_accepted_length:.2f} tok/pass"
    forms = [
        [tokens, f"{view.tokens_per_second:.1f} tok/s", per_pass, f"{accepted} accepted", f"est. {view.speedup_text}",
         "slower than the target alone" if slow else "", off, "^t panel"],
        [tokens, f"{view.tokens_per_second:.0f} tok/s", per_pass, f"{accepted} acc", view.speedup_text,
         "slower than target" if slow else "", off, "^t"],
        [tokens, per_pass, f"{accepted} acc", view.speedup_text, "slower" if slow else "", off, "^t"],
        [tokens, per_pass, f"{accepted} acc", view.speedup_text, "slower" if slow else "", counted, "^t"],
    ]
    lines = [" · ".join(p for p in parts if p) for parts in forms]
    if width is None:
        return lines[0]
    fitting = [text for text in lines if len(text) <= width]
    return fitting[0] if fitting else lines[-1][:max(width - 1, 0)] + "…"
