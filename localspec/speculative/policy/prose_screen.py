"""The prose screen: whether a guess from a lookup source (n-gram, copy, recall) is worth its rows outside a
grammar, judged by the measured pass curve (Pricing.guesses_pay says why the cut alone is not enough), and what is
learned from the guesses it keeps out.

A guess kept out is never verified, so its source's acceptance would never be learned: a source kept out by its
prior would stay out where it has become right (a reply that loops). So the guess left out at the start of a draft
is kept as the shadow and judged at the next proposal against what the target wrote meanwhile, as if it had been
drafted. And a likely guess kept out by its pass's price alone is let through now and then, so that pass is timed
anew: a price taken while the machine stalled would otherwise keep it out for good, since a pass shape no draft uses
is never timed again (seen: the app's Gemma turns drafting 5 of 120 tokens in one run of three, 100 in the others).
"""

from __future__ import annotations

from typing import Sequence

from localspec.speculative.indexes.prefix import shared_len
from localspec.speculative.policy.pricing import Pricing
from localspec.speculative.policy.rates import AcceptanceRates

RETRY_AFTER = 16  # a likely guess kept out by its price alone is let through once in this many such proposals ...
RETRY_RATE = 0.6  # ... if its first token is at least this likely


class ProseScreen:
    def __init__(self, pricing: Pricing, rates: AcceptanceRates):
        self.pricing = pricing
        self.rates = rates
        # The guess left out of the last proposal: (where it starts in the history, its tokens, their acceptance
        # buckets); and the history's length at the last proposal.
        self.shadow: tuple[int, list[int], list[tuple[str, int]]] | None = None
        self.at = 0
        self.screened = 0  # guesses kept out by their pass's price since one was let through

    def pays(self, toks: Sequence[int], probs: Sequence[float], buckets: Sequence[tuple[str, int]],
             rows_before: int) -> bool:
        """Whether a guess of `toks`, verification reaching each with probability `probs`, pays for what its rows
        add to a pass after `rows_before` drafted rows. One that does not, at the start of a draft, becomes the
        shadow (its acceptance `buckets` are judged at the next proposal)."""
        if self.pricing.guesses_pay(sum(probs), len(toks), rows_before):
            self.screened = 0
            return True
        self.screened += 1
        if self.screened >= RETRY_AFTER and probs[0] >= RETRY_RATE:
            self.screened = 0
            return True
        if not rows_before and self.shadow is None:
            self.shadow = (self.at, list(toks), list(buckets))
        return False

    def judge(self, history: Sequence[int]) -> None:
        """A new proposal over `history`: the guess left out of the last one is judged by what the target wrote
        since, as if it had been drafted (the tokens that match accepted, the first that does not rejected; no pass
        to drift the other rates by)."""
        shadow, self.shadow, self.at = self.shadow, None, len(history)
        if shadow is None or self.rates.fixed or len(history) <= shadow[0]:
            return
        at, toks, keys = shadow
        written = history[at: at + len(toks)]
        n = shared_len(toks, written)
        self.rates.learn(keys[: min(n + 1, len(written))], n, drift=False)

    def new_text(self) -> None:
        """A generation ended: another request's tokens may sit where the shadow's guess would have gone."""
        self.shadow = None
