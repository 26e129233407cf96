"""What one draft-model token costs, what catching it up costs, and when a draft model that sits out is priced
again or let back in.

Why a module of its own: the price decides whether the draft model drafts at all, and a draft model that does not
pay must cost nothing (issue 34: SmolLM2-135M F16 drafted by its Q4_1 copy ran at 0.92x target-only, 0.77x on the
worst prompt, on this 2-core CPU, where the Q4_1 step costs 7.0 ms against the F16 target's 7.9 ms; its tries
caught up whole prompts, 0.37 s of a 2.76 s reply). So:

- one drafted token costs a single-token step of the draft model, the median of its recent ones (its own
  decodes: sources/draft_model.py), starting from the steps timed at load; with another machine's cost profile
  (`localspec bench --cost-profile`) the profile's draft step, fixed;
- a draft model that sits out is fed nothing. Tokens it missed are caught up in one batch when it is asked again,
  priced as such a batch costs (on this CPU a third of a step a token for SmolLM2's Q4_1 copy): it comes back only
  when what it can still win in this reply pays for that (worth_catching_up);
- while it sits out it is priced again now and then (REPROBE_FIRST proposals after it went out, then twice as long
  each time, at most REPROBE_MAX) by one single step where its cache ends, rolled back: a first price taken before
  a GPU reached steady state (7.7 ms against llama-bench's 1.44 ms on an H200) or on a busy machine is corrected at
  the cost of one step, not of a catch-up;
- a draft head (speculative/heads/) is priced the same way, by its own decodes (a profile's head step where the
  profile prices one), and a draft model of another vocabulary (sources/translated.py) also pays its text's round
  trip between the two vocabularies, measured per drafted token and added to the price, a profile's too (it runs on
  the CPU there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from localspec.speculative.costs import PassPrices
from localspec.speculative.sources.draft_model import STEADY_FEED

if TYPE_CHECKING:
    from localspec.speculative.costs import CostModel
    from localspec.speculative.sources.draft_model import ModelCall

REPROBE_FIRST = 64  # proposals a priced-out model sits out before its price is taken again ...
REPROBE_MAX = 1024  # ... doubling while it still does not pay, up to this
# The acceptance a drafter may turn out to have when it has shown less or nothing yet: a head (or a draft model
# whose price a profile fixed), which no single step can price again, is tried now and then where it would pay at
# this rate (its tokens verified, its acceptance learned); a draft model is only priced again by a step (hybrid.py
# _asked says why). (A same-family quantized draft is accepted 70-95% of the time; llama.cpp's MTP heads about 80%.)
PLAUSIBLE = 0.9
TRANSLATE_EMA = 0.2  # weight of a new measurement in a translated draft's running translation price
HORIZON = 256  # most tokens of a reply counted as still to come when a catch-up is weighed (max_tokens may be 32k)


class ModelPrice:
    """The draft model's prices (seconds) and the schedule of its re-pricing while it sits out."""

    def __init__(self, costs: CostModel | None = None, *, profile: PassPrices | None = None, head: str = ""):
        self.costs = costs  # the draft context's own decodes (None: no model, or nothing measured)
        # A cost profile's step and batch for this drafter: the draft model's, or head `head`'s.
        step = getattr(profile, "head_step_s" if head else "draft_step_s", None)
        self.fixed_s = (step(head) if head else step()) if callable(step) else 0.0  # 0.0: the profile has none
        draft_pass = getattr(profile, "head_pass_s" if head else "draft_pass_s", None)
        self._profile_pass = draft_pass if self.fixed_s and callable(draft_pass) else None
        self.translate_s = 0.0  # a translated draft's text round trip per drafted token (0.0: none, or not yet)
        self.out_for = 0  # proposals since the model was last priced while out
        self.reprobe_after = REPROBE_FIRST

    def token_s(self, guess_s: float = 0.0) -> float:
        """One drafted token: the profile's step, else the median of its recent single steps, else `guess_s` (from
        the file sizes, before anything is measured); and a translated draft's translation on top."""
        if self.fixed_s:
            return self.fixed_s + self.translate_s
        measured = self.costs.single_token_s() if self.costs is not None else 0.0
        return (measured or guess_s) + self.translate_s

    def observe(self, call: ModelCall) -> None:
        """A translated draft's round trip, per drafted token, from one call (its decodes reach `costs` directly)."""
        if call.translate_s:
            per = call.translate_s / max(call.drafted, 1)  # a call that drafts nothing translated all the same
            self.translate_s = per if not self.translate_s else (1 - TRANSLATE_EMA) * self.translate_s + TRANSLATE_EMA * per

    def catch_up_s(self, n: int) -> float:
        """Feeding it `n` tokens it missed, in one batch."""
        if n <= 0:
            return 0.0
        if self._profile_pass is not None:
            return float(self._profile_pass(n, 1) or 0.0) or n * self.fixed_s
        batch = self.costs.cost(n, 1) if self.costs is not None and self.costs.ready else 0.0
        return batch or n * self.token_s()  # no batch timed: as dear as steps (errs towards staying out)

    @property
    def can_reprice(self) -> bool:
        """Whether a probe can move the price (a profile's price does not change)."""
        return not self.fixed_s and self.costs is not None

    def probe_due(self) -> bool:
        """The model sits out this proposal: True when it is due to be priced again or tried (then the next time,
        if it still does not pay, waits twice as long)."""
        self.out_for += 1
        if self.out_for < self.reprobe_after:
            return False
        self.out_for = 0
        self.reprobe_after = min(2 * self.reprobe_after, REPROBE_MAX)
        return True

    def sit_out_quietly(self) -> bool:
        """Count one more proposal out without pricing, unless a probe is due at it (then False: the caller prices
        it, and probe_due() fires)."""
        if self.out_for + 1 >= self.reprobe_after:
            return False
        self.out_for += 1
        return True

    def paid(self) -> None:
        """The model drafted on its price: the schedule starts over."""
        self.out_for, self.reprobe_after = 0, REPROBE_FIRST


def proposal_gain(rates: Sequence[float], step_s: float, token_s: float, row_s: float, max_len: int) -> tuple[float, float]:
    """(seconds one proposal of the draft model is expected to save, tokens it is expected to emit): each drafted
    token is reached with the product of the rates so far, saves a target step when accepted, and costs a draft
    step and a row whether or not it is; drafting stops where one more token no longer pays."""
    gain, reach, tokens = 0.0, 1.0, 1.0  # the target's own token comes with every pass
    for i in range(max_len):
        reach *= rates[min(i, len(rates) - 1)]
        more = reach * step_s - token_s - row_s
        if more <= 0:
            break
        gain += more
        tokens += reach
    return gain, tokens


def worth_catching_up(behind: int, catch_up_s: float, gain_s: float, tokens: float, remaining: int | None) -> bool:
    """Whether a draft model that missed `behind` tokens should catch up now: what it is expected to save over the
    rest of the reply (`gain_s` a proposal, each emitting `tokens`; at most HORIZON tokens counted) pays for the
    catch-up. A feed of the target's pending token or two is a steady step, always worth it."""
    if behind <= STEADY_FEED:
        return True
    left = HORIZON if remaining is None else min(remaining, HORIZON)
    return gain_s * left / max(tokens, 1.0) > catch_up_s
