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
    reused_prefix_tokens: int = 0  # prompt tokens not evaluated: kept in the cache, or restored from a saved prefix
    restored_prefix_tokens: int = 0  # ... of which read from a saved prefix state (runtime/prefixes.py)
    first_token_s: float = 0.0  # from the start of the generation (prefill included) to its first token
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
    # The decisions about drafters made during this generation (a drafter switched off, or off for another reason
    # than before), each said once: what the command line prints (switched_off is the standing state).
    drafting_notes: dict[str, str] = field(default_factory=dict)
    source: str = ""  # who measured these figures: "" this engine, else a remote server ("llama-server", ...)
    remote_estimate: float | None = None  # a remote server's own speedup estimate (localspec serve reports one)
    # The target's verify passes by shape, (rows, logits rows) -> count, and the draft model's decodes likewise with
    # the seconds they took: a cost profile prices them to project this run onto another machine
    # (speculative/profile.py), keeping the rest of the run's time (the bookkeeping) as measured.
    pass_shapes: Counter = field(default_factory=Counter)
    draft_shapes: Counter = field(default_factory=Counter)
    draft_decode_s: float = 0.0
    # The draft model has another vocabulary than the target's: its text is tokenized again with the target's
    # (speculative/sources/translated.py).
    draft_translated: bool = False
    # The draft head's decodes likewise (speculative/heads/): its catch-ups on the target's rows and its steps.
    head_shapes: Counter = field(default_factory=Counter)
    head_decode_s: float = 0.0

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
    def target_only_s(self) -> float | None:
        """What target-only decoding would have taken for these tokens: a generation that drafted nothing was
        target-only decoding (its own time); else a plain step (plain_step_s) per token. None: no step measured yet."""
        if not self.drafted:
            return self.generation_s
        step = self.plain_step_s
        return self.generated_tokens * step if step else None

    @property
    def estimated_speedup(self) -> float | None:
        """Against target-only decoding (see `estimate_speedup`): exactly 1.0 when nothing was drafted (that was
        target-only decoding); else the whole generation time, drafting, every drafted pass at its measured cost and
        the bookkeeping included, against a plain step per token. None until there is data (no token, or no plain
        step measured yet): a UI shows "–", never a guess."""
        if self.source:  # a remote server's figures: its own estimate, or none (nothing is guessed here)
            return self.remote_estimate
        if not self.generated_tokens:
            return None
        if not self.drafted:
            return 1.0
        got = estimate_speedup(self.generated_tokens, self.target_passes, self.generation_s, self.plain_step_s)
        return got or None

    def record_position(self, pos: int, accepted: bool) -> None:
        while len(self.per_position_drafted) <= pos:
            self.per_position_drafted.append(0)
            self.per_position_accepted.append(0)
        self.per_position_drafted[pos] += 1
        if accepted:
            self.per_position_accepted[pos] += 1

    def merge(self, other: "Stats") -> None:
        """Add another generation's counts and times (session totals). How the prompt was read and when the first
        token came are the first merged generation's (a turn's later phases continue its prompt)."""
        if not self.target_passes and not self.generated_tokens and not self.prefill_tokens:
            self.reused_prefix_tokens = other.reused_prefix_tokens
            self.restored_prefix_tokens = other.restored_prefix_tokens
            self.first_token_s = other.first_token_s
        for name in ("generated_tokens", "prompt_tokens", "prefill_tokens", "target_passes", "drafted", "accepted",
                     "forced", "prefill_s", "draft_s", "verify_s", "decode_s", "wall_s", "plain_passes",
                     "plain_verify_s", "plain_decode_s", "draft_decode_s", "head_decode_s"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.pass_shapes.update(other.pass_shapes)
        self.draft_shapes.update(other.draft_shapes)
        self.head_shapes.update(other.head_shapes)
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
        self.drafting_notes.update(other.drafting_notes)
        self.source = other.source or self.source
        self.draft_translated = other.draft_translated or self.draft_translated

    def to_dict(self) -> dict:
        return {
            "generated_tokens": self.generated_tokens,
            "prompt_tokens": self.prompt_tokens,
            "prefill_tokens": self.prefill_tokens,
            "reused_prefix_tokens": self.reused_prefix_tokens,
            "restored_prefix_tokens": self.restored_prefix_tokens,
            "time_to_first_token_s": round(self.first_token_s, 4),
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
            "estimated_speedup": None if self.estimated_speedup is None else round(self.estimated_speedup, 3),
            "time_s": {"prefill": round(self.prefill_s, 4), "draft": round(self.draft_s, 4),
                       "verify": round(self.verify_s, 4), "other": round(self.other_s, 4)},
            "wall_s": round(self.wall_s, 4),
            "finish_reason": self.finish_reason,
            "switched_off": dict(self.switched_off),
            "drafting_notes": dict(self.drafting_notes),
            **({"source": self.source} if self.source else {}),
            "pass_shapes": shape_list(self.pass_shapes),
            "draft_model_shapes": shape_list(self.draft_shapes),
            "draft_model_decode_s": round(self.draft_decode_s, 4),
            "draft_translated": self.draft_translated,
            **({"head_shapes": shape_list(self.head_shapes), "head_decode_s": round(self.head_decode_s, 4)}
               if self.head_shapes else {}),
        }

    def summary(self) -> str:
        """One line for the command line: what was generated, how fast, what speculation did and what is switched
        off (with why). Figures without data say "–", never 0."""
        rate = f"{100 * self.acceptance_rate:.0f}%" if self.drafted else "–"
        est = self.estimated_speedup
        line = (f"{self.generated_tokens} tokens, {self.tokens_per_second:.1f} tok/s, "
                f"{self.target_passes} target passes, accepted {self.accepted}/{self.drafted} ({rate}), "
                f"{self.mean_accepted_length:.2f} tokens/pass, est. speedup {'–' if est is None else f'{est:.2f}x'}")
        off = switched_off_text(self.drafting_notes)
        if self.draft_translated:
            line += "; draft model translated (another tokenizer)"
        return line + (f"; {off}" if off else "")


def switched_off_text(switched: dict[str, str]) -> str:
    """Drafters resting for now, with the reason each gave ("" when none is)."""
    return "; ".join(f"{name} drafter switched off: {why}" for name, why in sorted(switched.items()))
