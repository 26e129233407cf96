"""What one draft-model token costs, as the hybrid prices it, and when a priced-out draft model is tried again.

Why a module of its own: on a GPU the price decides whether the draft model drafts at all. On an H200 the first
price, taken before the GPU reached steady state, said 7.7 ms a draft token against a 5.9 ms target step, and the
draft model was switched off for good, where llama-bench timed the same draft at 1.44 ms against 3.84 ms. So:

- the price is the draft model's own decode time per token, from its single-token steps. A call that first feeds
  the model a long stretch it missed (the catch-up after it sat out) is not a token's price: such a call only
  prices its single steps, and says nothing when it made none;
- a priced-out model is tried again now and then (REPROBE_FIRST proposals after it went out, then twice as long
  each time it still does not pay, at most REPROBE_MAX), so a price that was wrong, or a machine that got faster
  (a GPU warming up, other jobs ending), lets it back in;
- with another machine's cost profile (`localspec bench --cost-profile`) the profile's draft step is the price:
  the policy then drafts as it would there, and nothing measured here overrides it;
- a draft model of another vocabulary (sources/translated.py) also pays its text's round trip between the two
  vocabularies, measured per drafted token and added to the price, a profile's too (it runs on the CPU there).
"""

from __future__ import annotations

from localspec.speculative.sources.draft_model import ModelCall

EMA = 0.2  # weight of a new measurement in the running price
STEADY_FEED = 2  # tokens a call may feed before drafting and still be a steady-state step (the target's pending one)
REPROBE_FIRST = 64  # proposals a priced-out model sits out before it is tried again ...
REPROBE_MAX = 1024  # ... doubling while it still does not pay, up to this


class ModelPrice:
    """The running price of one draft token (seconds), and the schedule of tries while the model is priced out."""

    def __init__(self, token_s: float = 0.0, *, fixed_s: float = 0.0):
        self.token_s = token_s  # measured (0.0: nothing yet), starting from the load-time steady-state timing
        self.fixed_s = fixed_s  # a cost profile's price (0.0: none): when set, measurements do not move the price
        self.out_for = 0  # proposals since the model last drafted while priced out
        self.reprobe_after = REPROBE_FIRST
        self.translate_s = 0.0  # a translated draft's text round trip per drafted token (0.0: none, or not yet)

    def price(self, fallback_s: float) -> float:
        """The price to use: the profile's, else the measured one, else `fallback_s` (a guess from file sizes); and
        a translated draft's translation on top."""
        return (self.fixed_s or self.token_s or fallback_s) + self.translate_s

    def observe(self, call: ModelCall, *, anew: bool = False) -> None:
        """Fold one call's timing into the price (a profile's price stays as it is). `anew`: the call was a try of
        a priced-out model, and its timing replaces the price (the old one is what kept the model out: folding
        into it would take a dozen tries, thousands of proposals apart)."""
        if call.translate_s:
            per = call.translate_s / max(call.drafted, 1)  # a call that drafts nothing translated all the same
            self.translate_s = per if anew or not self.translate_s else (1 - EMA) * self.translate_s + EMA * per
        if self.fixed_s:
            return
        if call.fed <= STEADY_FEED:
            # Steady state: feeding the target's token and the steps are what each drafted token costs. A call
            # that drafts nothing (its first guess under p_min) still fed the model: it counts as one token's
            # cost, else a model that never drafts would be fed every step at no price.
            per = (call.feed_s + call.steps_s) / max(call.drafted, 1)
        elif call.decodes:
            per = call.steps_s / call.decodes  # after a catch-up: only the single steps say what a token costs
        else:
            return
        self.token_s = per if anew or not self.token_s else (1 - EMA) * self.token_s + EMA * per

    def sat_out(self) -> bool:
        """The model was priced out of this proposal: True when it is due a try anyway (then the next try, if it
        still does not pay, waits twice as long)."""
        if self.fixed_s:
            return False  # the profile's price does not change: trying again would learn nothing
        self.out_for += 1
        if self.out_for < self.reprobe_after:
            return False
        self.out_for = 0
        self.reprobe_after = min(2 * self.reprobe_after, REPROBE_MAX)
        return True

    def paid(self) -> None:
        """The model drafted on its price: the schedule starts over."""
        self.out_for, self.reprobe_after = 0, REPROBE_FIRST
