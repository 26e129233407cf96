"""The hybrid drafting policy on literal numbers: no model, no llguidance, milliseconds.

What is tested is the arithmetic that keeps being tuned: acceptance priors and how observations move them (EMA,
DRIFT in policy/rates.py), when one more drafted row pays (Pricing.threshold, from the cost model), how far a candidate
is taken (_take, FLOOR) and where a draft is cut (cut_length). Every expected value below is worked out by hand in its comment, so
a change to a constant or a formula fails here first. The grammar is a small scripted Constraint (the real one needs
a model's vocabulary; tests/speculative/policy/test_choice_points.py drives the same policy on SmolLM2 with
llguidance); the cost model is the real CostModel, fed the timings of a made-up machine.
"""

from __future__ import annotations

import pytest

from localspec.speculative.costs import CostModel
from localspec.speculative.draft import CandidateDrafter, Draft, DraftRequest
from localspec.speculative.policy.hybrid import LINE, PROSE, START, HybridDrafter, Priced
from localspec.speculative.policy.pricing import Pricing, cut_length
from localspec.speculative.policy.rates import AcceptanceRates
from localspec.speculative.profile import FORMAT, CostProfile
from localspec.speculative.sampling import SamplingParams
from tests.speculative.fakes import Script

# The made-up machine: a pass costs C0 + C1 per batch row + C2 per logits row.
C0, C1, C2 = 0.010, 0.001, 0.002


def measured(c0: float = C0, c1: float = C1, c2: float = C2) -> CostModel:
    costs = CostModel()
    for n, r in [(1, 1), (1, 1), (4, 4), (8, 2), (16, 16), (16, 1), (24, 6)]:
        costs.observe(n, r, c0 + c1 * n + c2 * r)
    costs._fit()  # fit now, not only every 8th observation
    return costs


class Literal(CandidateDrafter):
    """A source that proposes the same tokens (what an n-gram or history match would find) where the context is
    `at` tokens long, nothing elsewhere."""

    def __init__(self, name: str, tokens: list[int], at: int, match: int = 1, breaks: tuple[int, ...] = (),
                 suffix: str = ""):
        self.name = name
        self.tokens = tokens
        self.at = at
        self.match = match
        self.breaks, self.suffix = breaks, suffix  # what a copy would report: line starts, the value it goes into

    def candidate(self, context, max_len, constraint=None):
        if len(context) != self.at:
            return None
        return self.found(self.tokens[:max_len], self.match, breaks=self.breaks, suffix=self.suffix)


# -- priors and learned rates ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, bucket, prior", [
    ("history", START, 0.75),  # a candidate's first token: the source's own prior
    ("ngram", START, 0.5),
    ("span", START, 0.7),
    ("tool", START, 0.8),
    ("bytes", START, 0.9),
    ("close-next", START, 0.6),
    ("close-end", START, 0.4),
    ("history", 1, 0.85),  # the tokens that continue a candidate: _PRIOR_DEPTH, whatever the source
    ("ngram", 4, 0.85),
    ("model", 2, 0.7),  # except the draft model: its every token is a fresh guess
    ("ngram", START - 1, 0.25),  # a weak match: half the prior
    ("unknown", START, 0.5),  # a source without a prior
])
def test_priors(name, bucket, prior):
    assert HybridDrafter(costs=CostModel()).rate(name, bucket) == pytest.approx(prior, abs=1e-12)


def test_observe_moves_judged_rates_by_the_ema_and_skips_the_rest():
    hybrid = HybridDrafter(costs=CostModel())
    hybrid._keys = [None, ("ngram", START), ("ngram", 1), ("ngram", 2)]  # a forced token, then a copied span
    hybrid.observe(Draft(), 2)  # forced + first copied token accepted, the second rejected, the third never judged
    assert hybrid.rates.learned == pytest.approx({
        ("ngram", START): 0.85 * 0.5 + 0.15,  # 0.575
        ("ngram", 1): 0.85 * 0.85,  # 0.7225
    })
    assert hybrid.rate("ngram", 2) == 0.85  # never judged: still the prior


def test_observe_drifts_every_rate_towards_its_prior_before_updating():
    hybrid = HybridDrafter(costs=CostModel())
    hybrid.rates.learned = {("ngram", START): 0.575, ("history", 1): 0.5}
    hybrid._keys = []
    hybrid.observe(Draft(), 0)  # nothing judged: drift alone, 1% of the way back to the prior
    assert hybrid.rates.learned == pytest.approx({("ngram", START): 0.575 - 0.01 * 0.075,  # 0.57425
                                          ("history", 1): 0.5 + 0.01 * 0.35})  # 0.5035
    hybrid._keys = [("ngram", START)]
    hybrid.observe(Draft(), 0)  # drift (0.57425 -> 0.5735075), then the rejection
    assert hybrid.rates.learned[("ngram", START)] == pytest.approx(0.85 * (0.57425 - 0.01 * 0.07425))  # 0.487481...


def test_a_shut_out_source_recovers_by_drift():
    hybrid = HybridDrafter(costs=CostModel())
    hybrid.rates.learned[("ngram", START)] = 0.01  # below every threshold: no longer drafted, so no longer observed
    for _ in range(100):
        hybrid.observe(Draft(), 0)
    # 0.5 - 0.49 * 0.99^100
    assert hybrid.rate("ngram", START) == pytest.approx(0.5 - 0.49 * 0.99 ** 100)  # 0.3206...
    assert hybrid.rate("ngram", START) == pytest.approx(0.32064, abs=1e-5)


def test_seeded_sampling_uses_priors_only():
    hybrid = HybridDrafter(costs=measured())
    hybrid.rates.learned[("ngram", START)] = 0.1
    hybrid.rates.fixed = True  # what propose() sets for seeded sampling: drafts must replay exactly
    assert hybrid.rate("ngram", START) == 0.5
    assert hybrid.pricing.threshold() == 0.15 and hybrid.pricing.unit_costs() == (1.0, 0.08, 0.1)


def test_seeded_sampling_does_not_ask_a_source_that_remembers_earlier_generations():
    """Seeded sampling must replay exactly: a draft from what a first run generated would change the second's
    accept/resample draws."""
    recall, plain = Literal("recall", [7, 8], at=1), Literal("ngram", [5, 6], at=1)
    recall.remembers = True
    hybrid = HybridDrafter(costs=CostModel(), sources=[recall])
    assert hybrid.propose(DraftRequest([0], 8, SamplingParams())).tokens == [7, 8]  # greedy: asked
    seeded = DraftRequest([0], 8, SamplingParams(temperature=0.8, seed=3))
    assert hybrid.propose(seeded).tokens == []
    assert HybridDrafter(costs=CostModel(), sources=[plain]).propose(seeded).tokens == [5, 6]


# -- costs -----------------------------------------------------------------------------------------------------

def test_threshold_is_a_rows_marginal_cost_over_a_plain_step():
    assert HybridDrafter(costs=CostModel()).pricing.threshold() == 0.15  # nothing measured yet
    hybrid = HybridDrafter(costs=measured())
    step = C0 + C1 + C2  # 0.013: one plain decoding step
    assert hybrid.pricing.threshold() == pytest.approx((C1 + C2) / step)  # 0.2308: a row and its logits
    assert hybrid.pricing.threshold(0.005) == pytest.approx((C1 + C2 + 0.005) / step)  # 0.6154: the draft model's time
    assert hybrid.pricing.threshold(1.0) == 0.95  # never more than that


def test_unit_costs_and_row_share():
    hybrid = HybridDrafter(costs=CostModel())
    assert hybrid.pricing.unit_costs() == (1.0, 0.08, 0.1)  # before any measurement: fixed proportions
    assert hybrid.pricing.row_share() == pytest.approx(0.18 / 1.18)
    hybrid = HybridDrafter(costs=measured())
    assert hybrid.pricing.unit_costs() == pytest.approx((C0, C1, C2))
    assert hybrid.pricing.row_share() == pytest.approx((C1 + C2) / (C0 + C1 + C2))  # 0.2308
    # Where rows cost almost a whole step, a pass's fixed cost is taken as at least a fifth of a step, and a row
    # with its logits at most the rest: 0.004 + 0.005 = 0.009 against a step of 0.010 is scaled by 0.008 / 0.009.
    hybrid = HybridDrafter(costs=measured(0.001, 0.004, 0.005))
    assert hybrid.pricing.unit_costs() == pytest.approx((0.2 * 0.010, 0.004 * 8 / 9, 0.005 * 8 / 9))
    # A fit skewed by stalled timings (a row at 3.6 steps): scaled the same way, so drafting does not stop.
    hybrid = HybridDrafter(costs=measured(0.001, 0.02, 0.02))  # step 0.041, rows 0.04: 0.0328 / 0.04
    assert hybrid.pricing.unit_costs() == pytest.approx((0.2 * 0.041, 0.02 * 0.82, 0.02 * 0.82))


# -- how far a candidate goes, where the draft is cut --------------------------------------------------------

RATES = [0.8, 0.9, 0.9, 0.9, 0.5]  # first token, then depth 1, 2, 3, 4+


@pytest.mark.parametrize("reach, thr, share, limit, n, value", [
    # reach: 0.8, 0.72, 0.648, 0.5832, 0.2916 (below 0.3: stop); value: the sum of reach - share
    (1.0, 0.3, 0.1, None, 4, 0.7 + 0.62 + 0.548 + 0.4832),
    (1.0, 0.3, 0.1, 2, 2, 0.7 + 0.62),  # compared over the first two tokens only
    (1.0, 0.02, 0.0, None, 6, 0.8 + 0.72 + 0.648 + 0.5832 + 0.2916 + 0.1458),  # _FLOOR-like threshold: all six
    (1.0, 0.3, 0.7, None, 4, 0.1 + 0.02),  # a row dearer than the odds: tokens still taken, worth nothing
    (0.5, 0.3, 0.0, None, 3, 0.4 + 0.36 + 0.324),  # already less likely to be reached: 0.2916 * 0.5 stops it
    (1.0, 0.9, 0.0, None, 0, 0.0),  # not even the first token
])
def test_take(reach, thr, share, limit, n, value):
    cand = Priced("ngram", [1, 2, 3, 4, 5, 6], "ngram", RATES, START)
    got_n, got_value = HybridDrafter._take(cand, reach, thr, share, limit)
    assert got_n == n and got_value == pytest.approx(value)


def test_take_counts_spelled_forced_text_at_the_forced_rate():
    # The first two tokens spell text the grammar forces: they go at 0.99, then the source's own guess starts.
    cand = Priced("ngram", [1, 2, 3, 4], "ngram", RATES, START, skip=2, forced_rate=0.99)
    assert [cand.rate(i) for i in range(4)] == [0.99, 0.99, 0.8, 0.9]
    assert cand.bucket(1) == ("bytes", START) and cand.bucket(2) == ("ngram", START) and cand.bucket(3) == ("ngram", 1)
    n, value = HybridDrafter._take(cand, 1.0, 0.3, 0.0)
    assert n == 4 and value == pytest.approx(0.99 + 0.9801 + 0.78408 + 0.705672)


# c0, c1, c2 = 1, 0.08, 0.1 (the unmeasured proportions). Per token: v -= (1 - p) * c1; a guess adds p * c0 - (1 -
# p_before) * c2. The longest prefix with the best v wins (ties: the longer one).
@pytest.mark.parametrize("probs, forced, n", [
    ([], [], 0),
    ([0.9, 0.81, 0.729], [False] * 3, 3),  # v = 0.892, 1.6768, 2.36512: every guess pays
    ([0.9, 0.05], [False] * 2, 1),  # v = 0.892, then 0.856: an unlikely guess costs more than it brings
    ([0.05], [False], 0),  # v = -0.026: not even one
    ([1.0, 1.0, 1.0, 0.6], [True, True, True, False], 4),  # v = 0, 0, 0, 0.568: forced rows carry the guess
    ([0.3, 0.3, 0.3], [False, True, True], 1),  # v = 0.244, 0.188, 0.132: forced rows after a shaky guess only cost
])
def test_cut_length(probs, forced, n):
    assert cut_length(probs, forced, 1.0, 0.08, 0.1) == n


def test_cut_length_follows_the_logits_cost():
    # [0.9, 0.5]: the second guess adds 0.5 * c0 - 0.1 * c2 and costs 0.5 * c1 in rows: pays unless logits are dear.
    assert cut_length([0.9, 0.5], [False, False], 1.0, 0.08, 0.1) == 2  # v = 0.892, then 0.892 - 0.04 + 0.49
    assert cut_length([0.9, 0.5], [False, False], 0.2, 0.08, 1.0) == 1  # v = 0.172, then 0.172 - 0.04 + 0.1 - 0.1
    # The first guess needs no logits row of its own (the row before it is the last token's, read anyway).
    assert cut_length([0.2], [False], 1.0, 0.08, 1.0) == 1  # v = 0.2 - 0.8 * 0.08 = 0.136


# -- one proposal, end to end --------------------------------------------------------------------------------

def _script() -> Script:
    # '{' 'name' forced, a choice (11 or 10), another (12 or 13), then '}' forced and the grammar complete.
    return Script([{1}, {2}, {10, 11}, {12, 13}, {3}])


def test_propose_drafts_forced_tokens_then_the_valid_part_of_a_candidate():
    # Asked after [0] + the two forced tokens; 99: the grammar refuses it.
    hybrid = HybridDrafter(costs=CostModel(), sources=[Literal("history", [11, 12, 99], at=3)])
    cons = _script()
    draft = hybrid.propose(DraftRequest([0], 16, SamplingParams(), cons))
    # reach: 1, 1 (forced), 0.75 (history's prior), 0.6375 (* 0.85 depth prior), then '}' forced at 0.6375;
    # cut_length: v = 0, 0, 0.73, 1.3135, 1.2845 -> 4 (and the forced end needs no pass: tail at 4).
    assert draft.tokens == [1, 2, 11, 12]
    assert draft.forced == [True, True, False, False]
    assert draft.origins == ["schema", "schema", "history", "history"]
    assert draft.next_forced == 3  # the verify pass needs no logits for its last row
    assert hybrid._keys == [None, None, ("history", START), ("history", 1)]
    assert cons.pos == 0  # the grammar is left where it was
    hybrid.observe(draft, 3)  # the forced ones and 11 accepted; 12 rejected
    assert hybrid.rates.learned == pytest.approx({("history", START): 0.85 * 0.75 + 0.15, ("history", 1): 0.85 * 0.85})


def test_propose_stops_where_reach_falls_below_the_floor():
    # A source that lost its standing: first token at 0.015, below _FLOOR (0.02): nothing but the forced tokens,
    # which then save nothing alone (cut_length keeps them: ties go to the longer prefix).
    hybrid = HybridDrafter(costs=CostModel(), sources=[Literal("history", [11, 12], at=3)])
    hybrid.rates.learned[("history", START)] = 0.015
    draft = hybrid.propose(DraftRequest([0], 16, SamplingParams(), _script()))
    assert draft.tokens == [1, 2] and draft.forced == [True, True]


def test_propose_without_a_grammar_cuts_a_long_copy():
    # No grammar: the copy is taken while reach stays above _FLOOR, then cut where the gain peaks.
    hybrid = HybridDrafter(costs=CostModel(), sources=[Literal("ngram", list(range(20, 40)), at=1)])
    hybrid.rates.learned.update({("ngram" + PROSE, START): 0.9, ("ngram" + PROSE, 4): 0.6,  # prose: rates of its own
                         **{("ngram" + PROSE, d): 0.85 for d in (1, 2, 3)}})
    draft = hybrid.propose(DraftRequest([0], 32, SamplingParams()))
    # reach: 0.9, 0.765, 0.65025, 0.5527, then * 0.6 per token: 0.3316, 0.199, 0.1194, 0.0716, 0.043, 0.0258
    # (0.0155 < _FLOOR: drafted no further). Gains per token: p - 0.1 (1 - p_before) - 0.08 (1 - p) for a guess:
    # positive while p > (0.08 + 0.1 (1 - p_before)) / 1.08: up to the 6th token (7th: 0.1194 < 0.1482).
    assert draft.tokens == list(range(20, 26))
    assert len(hybrid._keys) == 6 and hybrid._keys[4] == ("ngram" + PROSE, 4)


def test_where_rows_are_cheap_the_floor_decides_the_length():
    # Rows cost 1% of a pass here, so even unlikely tokens pay (cut_length keeps them): drafting stops at _FLOOR.
    hybrid = HybridDrafter(costs=measured(0.010, 0.0001, 0.0001), sources=[Literal("ngram", list(range(20, 40)), at=1)])
    hybrid.rates.learned.update({("ngram" + PROSE, START): 0.9, **{("ngram" + PROSE, d): 0.5 for d in (1, 2, 3, 4)}})
    draft = hybrid.propose(DraftRequest([0], 32, SamplingParams()))
    # reach: 0.9, 0.45, 0.225, 0.1125, 0.05625, 0.028125 (>= 0.02), 0.0140625 (< 0.02: not drafted)
    assert draft.tokens == list(range(20, 26))


# -- where a copy may stop (Candidate.breaks) and per-kind rates (Candidate.key) -------------------------------

def test_a_copys_line_starts_are_priced_and_learned_apart():
    # Two line starts in the copy; it goes into an edit's `old`.
    src = Literal("ngram", list(range(20, 30)), at=1, breaks=(4, 8), suffix=":old")
    hybrid = HybridDrafter(costs=measured(0.010, 0.0001, 0.0001), sources=[src])
    rates = {START: 0.9, 1: 0.99, 2: 0.99, 3: 0.99, 4: 0.99, LINE: 0.5}
    hybrid.rates.learned.update({("ngram:old", b): r for b, r in rates.items()})
    draft = hybrid.propose(DraftRequest([0], 32, SamplingParams(), Script([set(range(20, 30))] * 10)))
    assert [k for k in hybrid._keys] == [("ngram:old", START), ("ngram:old", 1), ("ngram:old", 2),
                                         ("ngram:old", 3), ("ngram:old", LINE)] + [("ngram:old", 4)] * 3 + \
        [("ngram:old", LINE), ("ngram:old", 4)]
    hybrid.observe(draft, 4)  # stopped at the first line start: only the LINE rate learns that
    assert hybrid.rates.learned[("ngram:old", LINE)] < 0.5 and hybrid.rates.learned[("ngram:old", 4)] == pytest.approx(0.99, abs=0.01)
    assert ("ngram", LINE) not in hybrid.rates.learned  # copies into other values keep their own rates


def test_a_line_start_prices_the_draft_down():
    # The same copy with a line start that is rarely passed is cut there; without one it runs on.
    def cut_at(breaks):
        src = Literal("ngram", list(range(20, 40)), at=1, breaks=breaks)
        hybrid = HybridDrafter(costs=CostModel(), sources=[src])
        hybrid.rates.learned.update({("ngram", b): 0.99 for b in (START, 1, 2, 3, 4)} | {("ngram", LINE): 0.05})
        return len(hybrid.propose(DraftRequest([0], 32, SamplingParams(), Script([set(range(20, 40))] * 20))))
    assert cut_at(()) == 20 and cut_at((6,)) == 6


# -- prose guesses against the pass curve (Pricing.guesses_pay, issue 34) ---------------------------------------

def _profile(curve: dict[int, float]) -> CostProfile:
    return CostProfile({"format": FORMAT, "target": {"step_s": curve[1], "pass_s": {str(k): v for k, v in curve.items()}},
                        "draft": None})


# SmolLM2 F16 on this 2-core CPU (CostModel.calibrate, quiet): the first drafted row costs half a step, the next few
# almost nothing. A GPU-like curve: each row a few percent of a step.
CPU_CURVE = {1: 0.00738, 2: 0.01115, 4: 0.01166, 8: 0.01766, 16: 0.01946, 32: 0.03189}
GPU_CURVE = {1: 0.010, 2: 0.0102, 4: 0.0106, 8: 0.0114, 16: 0.013, 32: 0.016}


@pytest.mark.parametrize("curve, expected, rows, pays", [
    (CPU_CURVE, 0.3, 1, False),  # one guess at 30%: saves 2.2 ms of a 3.8 ms row
    (CPU_CURVE, 0.6, 1, True),  # at 60%: 4.4 ms
    (CPU_CURVE, 0.6, 3, True),  # rows 2 and 3 cost 0.3 ms more
    (CPU_CURVE, 0.6, 7, False),  # a pass of 8 rows: 10.3 ms over a step
    (CPU_CURVE, 9.7, 32, True),  # a repeated reply: 25.6 ms for 72 ms saved
    (GPU_CURVE, 0.3, 1, True),  # a row at 2% of a step: any likely guess pays
    (GPU_CURVE, 0.0, 1, False),
])
def test_guesses_pay_when_they_save_more_steps_than_the_pass_curve_adds(curve, expected, rows, pays):
    assert Pricing(_profile(curve), AcceptanceRates()).guesses_pay(expected, rows) is pays


def test_guesses_pay_is_independent_of_measurements_while_rates_are_fixed():
    rates = AcceptanceRates()
    rates.fixed = True  # seeded sampling replays exactly: nothing measured may decide
    assert Pricing(_profile(CPU_CURVE), rates).pass_extra_s(1) == 0.0


@pytest.mark.parametrize("curve, drafted", [(CPU_CURVE, []), (GPU_CURVE, [20, 21])])
def test_a_prose_guess_drafts_only_where_its_pass_pays(curve, drafted):
    # An n-gram guess at 25% then 70%: the line fit through the CPU curve prices a row at 0.72 ms, so the cut keeps
    # both; by the curve their pass costs 4.0 ms more than a step and saves 0.425 steps (3.1 ms): not drafted. On
    # the GPU-like curve the two rows add 0.4 ms: drafted.
    hybrid = HybridDrafter(costs=_profile(curve), sources=[Literal("ngram", [20, 21], at=1)])
    hybrid.rates.learned.update({("ngram" + PROSE, START): 0.25, ("ngram" + PROSE, 1): 0.7})
    draft = hybrid.propose(DraftRequest([0], 32, SamplingParams()))
    assert draft.tokens == drafted


def test_a_guess_left_out_is_judged_in_the_shadow_by_what_the_target_writes():
    hybrid = HybridDrafter(costs=_profile(CPU_CURVE), sources=[Literal("ngram", [20, 21, 22], at=1)])
    rates = {("ngram" + PROSE, START): 0.25, ("ngram" + PROSE, 1): 0.7, ("ngram" + PROSE, 2): 0.7}
    hybrid.rates.learned.update(rates)
    assert hybrid.propose(DraftRequest([0], 32, SamplingParams())).tokens == []
    # The target wrote 20, 21, 9: the guess's first two tokens were right, the third wrong; no pass drifted.
    hybrid.propose(DraftRequest([0, 20, 21, 9], 32, SamplingParams()))
    learned = hybrid.rates.learned
    assert learned[("ngram" + PROSE, START)] == pytest.approx(0.85 * 0.25 + 0.15)
    assert learned[("ngram" + PROSE, 1)] == pytest.approx(0.85 * 0.7 + 0.15)
    assert learned[("ngram" + PROSE, 2)] == pytest.approx(0.85 * 0.7)
    # Judged once: the next proposal has nothing left to judge.
    hybrid.propose(DraftRequest([0, 20, 21, 9, 5], 32, SamplingParams()))
    assert learned[("ngram" + PROSE, START)] == pytest.approx(0.85 * 0.25 + 0.15)


def test_a_guess_left_out_that_keeps_being_right_is_drafted_again():
    # A reply that loops: the n-gram's guess is right every time; judged in the shadow, its rate climbs until its
    # rows pay, and it is drafted.
    hybrid = HybridDrafter(costs=_profile(CPU_CURVE), sources=[Literal("ngram", [20, 21], at=1)])
    hybrid.rates.learned.update({("ngram" + PROSE, START): 0.1, ("ngram" + PROSE, 1): 0.5})
    for _ in range(20):
        if hybrid.propose(DraftRequest([0], 32, SamplingParams())).tokens:
            break
        hybrid.screen.judge([0, 20, 21])  # what the target wrote
    else:
        pytest.fail("never drafted")
    assert hybrid.rates.learned[("ngram" + PROSE, START)] > 0.3  # from 0.1


@pytest.mark.parametrize("first, drafted_after", [(0.9, 16), (0.5, None)])
def test_a_likely_guess_kept_out_by_its_price_alone_is_let_through_now_and_then(first, drafted_after):
    # Rows priced at a step each (a price taken while the machine stalled): no guess can pay by it. One the source
    # gets right is let through every RETRY_AFTER proposals, so its pass is timed anew; an unlikely one never is.
    stalled = {1: 0.010, 2: 0.020, 4: 0.040, 8: 0.080, 16: 0.160, 32: 0.320}
    hybrid = HybridDrafter(costs=_profile(stalled), sources=[Literal("ngram", [20, 21], at=1)])
    drafted = []
    for _ in range(32):
        hybrid.rates.learned.update({("ngram" + PROSE, START): first, ("ngram" + PROSE, 1): 0.9})  # as judged
        draft = hybrid.propose(DraftRequest([0], 32, SamplingParams()))
        hybrid.observe(draft, len(draft))  # right every time it is drafted
        drafted.append(bool(draft.tokens))
    if drafted_after is None:
        assert not any(drafted)
    else:
        assert [i + 1 for i, d in enumerate(drafted) if d] == [drafted_after, 2 * drafted_after]


def test_a_guess_left_out_is_not_judged_against_the_next_request():
    hybrid = HybridDrafter(costs=_profile(CPU_CURVE), sources=[Literal("ngram", [20, 21, 22], at=1)])
    hybrid.rates.learned.update({("ngram" + PROSE, START): 0.25, ("ngram" + PROSE, 1): 0.7})
    assert hybrid.propose(DraftRequest([0], 32, SamplingParams())).tokens == []
    hybrid.finish([0, 5], 1)  # the reply ended; the next request's tokens are another text
    hybrid.propose(DraftRequest([0, 20, 21, 22], 32, SamplingParams()))
    assert hybrid.rates.learned[("ngram" + PROSE, START)] == 0.25
