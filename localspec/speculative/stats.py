"""Speculative statistics, per generation and cumulative (what the CLI, TUI and server report)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field


PLAIN_PASSES_MIN = 8  # plain passes needed before their mean stands for a target-only step


def tokens_per_pass(tokens: int, passes: int) -> float:
    """Tokens per counted target pass; 0.0 before there is one."""
    return tokens / passes if passes else 0.0


def estimate_speedup(tokens: int, passes: int, decoding_s: float, single_token_s: float) -> float:
    """How many times faster than target-only decoding: (tokens x one single-token target step, measured on this
    machine) / (the time those tokens took). What the step includes, the time must include too (the live panel
    counts drafting and the target's passes; Stats.estimated_speedup the whole generation time against a plain
    step's wall time), so target-only decoding comes out at 1.00x. Capped at tokens per pass: a
    batched pass never costs less than a single-token one, so the only way to beat target-only decoding is to emit
    more tokens per pass; the cap keeps a single-token cost measured on a cold or busy machine from inflating the
    figure. 0.0: not measured."""
    if not single_token_s or decoding_s <= 0 or not passes:
        return 0.0
    return min(tokens * single_token_s / decoding_s, tokens_per_pass(tokens, passes))


def shape_list(shapes: Counter) -> list[list[int]]:
    """A shape histogram as JSON: [[rows, logits rows, count], ...] by rows, then logits rows."""
    return [[rows, logits, n] for (rows, logits), n in sorted(shapes.items())]


@dataclass
class DrafterStats:
    drafted: int = 0
    accepted: int = 0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0


@dataclass
class Stats:
    generated_tokens: int = 0
    prompt_tokens: int = 0
    prefill_tokens: int = 0  # prompt tokens actually evaluated (the rest came from the reused cache)
    target_passes: int = 0
    drafted: int = 0
    accepted: int = 0
    forced: int = 0  # accepted tokens that the grammar forced
    per_position_drafted: list[int] = field(default_factory=list)
    per_position_accepted: list[int] = field(default_factory=list)
    drafters: dict[str, DrafterStats] = field(default_factory=lambda: defaultdict(DrafterStats))
    prefill_s: float = 0.0
    draft_s: float = 0.0
    verify_s: float = 0.0
    decode_s: float = 0.0  # the target's forward passes alone (part of verify_s, without judging the rows)
    wall_s: float = 0.0
    target_token_s: float = 0.0  # measured cost of one single-token target pass, for the speedup estimate
    # Passes that verified nothing (an empty draft) are a plain decoding step: what they cost beyond the forward
    # pass itself (judging the row), as measured in this very run, target-only decoding pays per token too.
    plain_passes: int = 0
    plain_verify_s: float = 0.0
    plain_decode_s: float = 0.0
    finish_reason: str = ""
    switched_off: dict[str, str] = field(default_factory=dict)  # drafters not drafting for now, and why
    # The target's verify passes by shape, (rows, logits rows) -> count, and the draft model's decodes likewise with
    # the seconds they took: a cost profile prices them to project this run onto another machine
    # (speculative/profile.py), keeping the rest of the run's time (the bookkeeping) as measured.
    pass_shapes: Counter = field(default_factory=Counter)
    draft_shapes: Counter = field(default_factory=Counter)
    draft_decode_s: float = 0.0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def mean_accepted_length(self) -> float:
        """Tokens emitted per target pass (1.0 without speculation, never below 1): a pass counts when it emitted
        a token (the prompt's pass gives the first one; a last pass that only found the end does not count)."""
        return tokens_per_pass(self.generated_tokens, self.target_passes)

    @property
    def generation_s(self) -> float:
        return max(self.wall_s - self.prefill_s, 0.0)

    @property
    def other_s(self) -> float:
        return max(self.generation_s - self.draft_s - self.verify_s, 0.0)

    @property
    def tokens_per_second(self) -> float:
        return self.generated_tokens / self.generation_s if self.generation_s > 0 else 0.0

    @property
    def plain_step_s(self) -> float:
        """What one token costs decoding with the target alone, bookkeeping included: the single-token forward pass
        (target_token_s: the median of those measured lately, so a pass stalled by another process does not count),
        judging its row (measured on this run's passes that verified nothing, where there were enough of them, else
        on all its passes), and the loop's own time per token."""
        if not self.target_token_s or not self.target_passes:
            return 0.0
        if self.plain_passes >= PLAIN_PASSES_MIN:
            judge = (self.plain_verify_s - self.plain_decode_s) / self.plain_passes
        else:
            judge = (self.verify_s - self.decode_s) / self.target_passes
        return self.target_token_s + max(judge, 0.0) + self.other_s / max(self.generated_tokens, 1)

    @property
    def estimated_speedup(self) -> float:
        """Against target-only decoding (see `estimate_speedup`): the whole generation time, drafting and
        bookkeeping included, against what target-only decoding would have taken (plain_step_s per token)."""
        return estimate_speedup(self.generated_tokens, self.target_passes, self.generation_s, self.plain_step_s)

    def record_position(self, pos: int, accepted: bool) -> None:
        while len(self.per_position_drafted) <= pos:
            self.per_position_drafted.append(0)
            self.per_position_accepted.append(0)
        self.per_position_drafted[pos] += 1
        if accepted:
            self.per_position_accepted[pos] += 1

    def merge(self, other: "Stats") -> None:
        """Add another generation's counts and times (session totals)."""
        for name in ("generated_tokens", "prompt_tokens", "prefill_tokens", "target_passes", "drafted", "accepted",
                     "forced", "prefill_s", "draft_s", "verify_s", "decode_s", "wall_s", "plain_passes",
                     "plain_verify_s", "plain_decode_s", "draft_decode_s"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.pass_shapes.update(other.pass_shapes)
        self.draft_shapes.update(other.draft_shapes)
        for pos, (d, a) in enumerate(zip(other.per_position_drafted, other.per_position_accepted)):
            for _ in range(a):
                self.record_position(pos, True)
            for _ in range(d - a):
                self.record_position(pos, False)
        for name, ds in other.drafters.items():
            self.drafters[name].drafted += ds.drafted
            self.drafters[name].accepted += ds.accepted
        self.target_token_s = other.target_token_s or self.target_token_s
        self.finish_reason = other.finish_reason
        self.switched_off = dict(other.switched_off)

    def to_dict(self) -> dict:
        return {
            "generated_tokens": self.generated_tokens,
            "prompt_tokens": self.prompt_tokens,
            "prefill_tokens": self.prefill_tokens,
            "target_passes": self.target_passes,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "acceptance_rate": round(self.acceptance_rate, 4),
            "mean_accepted_length": round(self.mean_accepted_length, 4),
            "forced": self.forced,
            "acceptance_per_position": [round(a / d, 4) if d else 0.0 for d, a in
                                        zip(self.per_position_drafted, self.per_position_accepted)],
            "drafters": {k: {"drafted": v.drafted, "accepted": v.accepted,
                             "acceptance_rate": round(v.acceptance_rate, 4)} for k, v in self.drafters.items()},
            "tokens_per_second": round(self.tokens_per_second, 3),
            "estimated_speedup": round(self.estimated_speedup, 3),
            "time_s": {"prefill": round(self.prefill_s, 4), "draft": round(self.draft_s, 4),
                       "verify": round(self.verify_s, 4), "other": round(self.other_s, 4)},
            "wall_s": round(self.wall_s, 4),
            "finish_reason": self.finish_reason,
            "switched_off": dict(self.switched_off),
            "pass_shapes": shape_list(self.pass_shapes),
            "draft_model_shapes": shape_list(self.draft_shapes),
            "draft_model_decode_s": round(self.draft_decode_s, 4),
        }

    def summary(self) -> str:
        return (f"{self.generated_tokens} tokens, {self.tokens_per_second:.1f} tok/s, "
                f"{self.target_passes} target passes, accepted {self.accepted}/{self.drafted} "
                f"({100 * self.acceptance_rate:.0f}%), {self.mean_accepted_length:.2f} tokens/pass, "
                f"est. speedup {self.estimated_speedup:.2f}x")
