"""What drafting one more token is worth on this machine: a verify pass's fixed cost, a row's and a logits row's
(measured by the engine's CostModel, or a cost profile's), the least probability of acceptance for a row to pay,
and where a draft's expected gain peaks (cut_length)."""

from __future__ import annotations

from typing import Sequence

from localspec.speculative.costs import PassPrices
from localspec.speculative.policy.rates import THRESHOLD_UNMEASURED, AcceptanceRates

# Used when nothing is measured yet (and when seeded sampling must not depend on measurements): a pass's fixed
# cost, a batch row, a logits row, in units of a plain step.
UNIT_COSTS_UNMEASURED = (1.0, 0.08, 0.1)
MIN_FIXED_SHARE = 0.2  # a pass's fixed cost is at least this share of a plain step, whatever the fit says


def cut_length(probs: Sequence[float], forced: Sequence[bool], c0: float, c1: float, c2: float) -> int:
    """Length of the draft prefix with the best expected gain, from the probability that verification reaches
    each drafted token (`probs`, falling) and whether the grammar forces it. An accepted guess (a token the grammar
    does not force) saves a whole target pass, its fixed cost c0; every drafted row costs c1, and a guess also needs
    the logits of the row before it (c2): both are wasted when verification stops earlier. Forced tokens save
    nothing by themselves (the next pass would carry them as well); they only carry the guesses after them. Ties go
    to the longer prefix."""
    best_n, best_v, v, prev = 0, 0.0, 0.0, 1.0
    for i, (p, is_forced) in enumerate(zip(probs, forced)):
        v -= (1 - p) * c1
        if not is_forced:
            v += p * c0 - (1 - prev) * c2
        prev = p
        if v >= best_v - 1e-12:
            best_n, best_v = i + 1, v
    return best_n


class Pricing:
    """The pass prices as the policy reads them. While the rates are fixed (seeded sampling, which must replay
    exactly) every answer is independent of what was measured."""

    def __init__(self, costs: PassPrices, rates: AcceptanceRates):
        self.costs = costs
        self.rates = rates

    @property
    def fixed(self) -> bool:
        return self.rates.fixed

    def step_s(self) -> float:
        """One plain target step (0.0 before anything is measured)."""
        return self.costs.single_token_s()

    def unit_costs(self) -> tuple[float, float, float]:
        """(fixed cost of a pass, cost per row, cost per logits row), measured; fixed proportions when seeded."""
        coef = None if self.fixed else self.costs.coefficients()
        t1 = self.costs.single_token_s()
        if coef is None or not t1:
            return UNIT_COSTS_UNMEASURED
        _, c1, c2 = coef
        # A row never costs more than a plain step of its own (a pass of two rows is cheaper than two passes); a fit
        # over timings that other processes stalled can say otherwise (140 ms a row against a 38 ms step was seen
        # while a compiler ran), which would stop all drafting. Such rows are scaled down to what a step allows.
        over = (c1 + c2) / ((1 - MIN_FIXED_SHARE) * t1)
        if over > 1:
            c1, c2 = c1 / over, c2 / over
        return max(t1 - c1 - c2, MIN_FIXED_SHARE * t1), c1, c2

    def row_share(self) -> float:
        """A drafted row's cost in units of a plain decoding step."""
        c0, c1, c2 = self.unit_costs()
        return (c1 + c2) / (c0 + c1 + c2)

    def row_s(self) -> float:
        """A drafted row's cost in seconds (0.0 before anything is measured)."""
        return self.row_share() * self.step_s()

    def threshold(self, extra_s: float = 0.0) -> float:
        """Minimum probability of being accepted for one more drafted row to pay off, when drafting it costs
        `extra_s` besides its row (a draft model's step)."""
        t1 = self.costs.single_token_s()
        if not t1 or self.fixed:
            return THRESHOLD_UNMEASURED
        marginal = max(self.costs.cost(17, 17) - self.costs.cost(16, 16), 0.0)
        return min(0.95, (marginal + extra_s) / t1)

    def pass_extra_s(self, rows: int, before: int = 0) -> float:
        """What `rows` drafted rows add to a verify pass that already has `before` drafted rows, in seconds, from
        the measured pass curve (the profile's on another machine): a pass of before + rows + 1 against one of
        before + 1, both read off the same curve, so a shape priced from other processes' stalls moves both; never
        negative (a GPU's 2-row pass can cost less than a step), never more than a step a row. 0.0 before anything
        is measured or while the rates are fixed."""
        if self.fixed or rows < 1 or self.costs.coefficients() is None:
            return 0.0
        n = before + rows + 1
        extra = self.costs.cost(n, n) - self.costs.cost(before + 1, before + 1)
        return min(max(extra, 0.0), rows * self.step_s())

    def guesses_pay(self, expected: float, rows: int, before: int = 0) -> bool:
        """Whether `rows` guesses, `expected` of them accepted on average, are worth what they add to a pass (after
        `before` drafted rows): a pass of rows + 1 yields 1 + expected tokens where a plain step yields one, so it
        pays when its extra cost is less than `expected` steps. Why it is asked apart from the cut: the cut prices
        rows by a line through every pass size, about 1 ms a row for SmolLM2 F16 on this CPU, while the first row
        of a draft costs half a step (a pass of 2 rows 11.2 ms against a 7.4 ms step, of 4 rows 11.7 ms): prose
        guesses at 20-30% acceptance looked worth their rows and cost 5-16% of the reply (issue 34)."""
        return expected * self.step_s() >= self.pass_extra_s(rows, before)

    def cut(self, probs: Sequence[float], forced: Sequence[bool]) -> int:
        """Where to cut a draft (cut_length) with this machine's unit costs."""
        return cut_length(probs, forced, *self.unit_costs())
