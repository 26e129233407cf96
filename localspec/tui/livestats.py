"""Plain, immutable views of speculative statistics for display (computed off the UI thread).

Why: the engine's Stats object is mutated by the generating thread; the UI only ever sees frozen copies. While a
generation runs, Stats.wall_s is not set yet, so rates come from the elapsed time measured here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from localspec.speculative.stats import Stats


@dataclass(frozen=True)
class StatsView:
    generated: int = 0
    drafted: int = 0
    accepted: int = 0
    target_passes: int = 0
    acceptance_rate: float = 0.0
    mean_accepted_length: float = 0.0  # tokens per target pass
    tokens_per_second: float = 0.0
    estimated_speedup: float = 0.0  # against target-only decoding
    drafters: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (drafted, accepted)
    finish_reason: str = ""

    @classmethod
    def of(cls, stats: Stats, *, elapsed_s: float | None = None, target_token_s: float = 0.0) -> "StatsView":
        """A snapshot; elapsed_s (generation time so far) replaces the final timing while a generation runs."""
        drafters = {name: (d.drafted, d.accepted) for name, d in dict(stats.drafters).items()}
        if elapsed_s is None:
            tps, speedup = stats.tokens_per_second, stats.estimated_speedup
        else:
            tps = stats.generated_tokens / elapsed_s if elapsed_s > 0 else 0.0
            per_token = target_token_s or stats.target_token_s
            speedup = stats.generated_tokens * per_token / elapsed_s if elapsed_s > 0 and per_token else 0.0
        return cls(stats.generated_tokens, stats.drafted, stats.accepted, stats.target_passes, stats.acceptance_rate,
                   stats.mean_accepted_length, tps, speedup, drafters, stats.finish_reason)


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
