"""The draft model's price (policy/model_price.py): pure arithmetic in table tests, then the hybrid on a real tiny
pair: a priced-out model is fed nothing while it sits out (issue 34), is priced again by one step and let back in
by what it really costs, comes back only when its catch-up pays, and a cost profile's draft step prices it as that
machine would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.costs import CostModel
from localspec.speculative.draft import DraftRequest
from localspec.speculative.policy.hybrid import HybridDrafter
from localspec.speculative.policy.model_price import (HORIZON, REPROBE_FIRST, REPROBE_MAX, ModelPrice, proposal_gain,
                                                      worth_catching_up)
from localspec.speculative.profile import CostProfile
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.sources.draft_model import STEADY_FEED, ModelCall, ModelDrafter

H200 = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu" / "h200-8b-q4_0+0.5b-q8_0.json"


def _draft_costs(step: float, batch: tuple[int, float] | None = None) -> CostModel:
    costs = CostModel()
    for _ in range(3):
        costs.observe(1, 1, step)
    if batch is not None:
        costs.observe(batch[0], 1, batch[1])
    return costs


@pytest.mark.parametrize("call, steady", [
    # steady state (the target's token fed, then single steps): both are what drafting costs
    (ModelCall(fed=1, feed_s=0.002, decodes=3, steps_s=0.006, drafted=4), 0.008),
    # nothing drafted (first guess under p_min): the feed alone, not "a token's price" (issue 34)
    (ModelCall(fed=2, feed_s=0.003, decodes=0, steps_s=0.0, drafted=0), 0.003),
    # a catch-up of 300 tokens: priced when it was decided, not part of a step's cost
    (ModelCall(fed=300, feed_s=0.5, decodes=4, steps_s=0.004, drafted=5), 0.004),
])
def test_a_calls_steady_cost_leaves_out_catching_up(call, steady):
    assert call.steady_s == pytest.approx(steady)
    assert STEADY_FEED == 2  # the cases above assume it


def test_the_price_is_the_median_single_step_then_the_profile_then_the_guess():
    assert ModelPrice(None).token_s(0.5) == 0.5  # nothing measured: the file sizes' guess
    costs = _draft_costs(0.004)
    costs.observe(1, 1, 0.5)  # one step stalled by another process does not move the median
    assert ModelPrice(costs).token_s(0.5) == 0.004
    profile = CostProfile(json.loads(H200.read_text()), measured=CostModel())
    assert ModelPrice(costs, profile=profile).token_s() == profile.draft_step_s()  # that machine's, fixed


def test_a_translated_drafts_round_trip_is_part_of_its_price():
    """A draft of another vocabulary (sources/translated.py) pays its translation per drafted token, on top of its
    steps: measured here, and added to a profile's price too (the translation runs on that machine's CPU)."""
    p = ModelPrice(_draft_costs(0.002))
    p.observe(ModelCall(fed=1, feed_s=0.002, decodes=3, steps_s=0.006, drafted=4, translate_s=0.001))
    assert p.translate_s == pytest.approx(0.00025) and p.token_s() == pytest.approx(0.00225)
    profile = CostProfile(json.loads(H200.read_text()), measured=CostModel())
    fixed = ModelPrice(_draft_costs(0.01), profile=profile)
    fixed.observe(ModelCall(fed=1, feed_s=1.0, drafted=0, translate_s=0.0004))  # nothing drafted: one token's worth
    assert fixed.token_s() == pytest.approx(profile.draft_step_s() + 0.0004)
    same = ModelPrice(_draft_costs(0.01))
    same.observe(ModelCall(fed=1, feed_s=0.002, decodes=1, steps_s=0.01, drafted=2))
    assert same.token_s() == 0.01  # a draft of the target's own vocabulary translates nothing


def test_a_head_is_priced_by_the_profiles_head_step_and_batch():
    """Under a cost profile that prices a head, the head's tokens and catch-ups are that machine's (its step and a
    batch of its rows), not the draft model's."""
    profile = CostProfile(json.loads(H200.read_text()), measured=CostModel())
    profile.heads = {"mtp": (0.002, profile.target)}  # priced like a one-layer pass of the target's curve
    head = ModelPrice(_draft_costs(0.05), profile=profile, head="mtp")
    assert head.token_s() == 0.002 and head.catch_up_s(40) == pytest.approx(profile.target.pass_s(40, 1))
    assert ModelPrice(_draft_costs(0.05), profile=profile, head="eagle3").token_s() == 0.05  # not priced there


@pytest.mark.parametrize("costs, n, seconds", [
    (_draft_costs(0.006, (32, 0.070)), 0, 0.0),  # nothing missed
    # a batch is priced by the draft's own batches (a line through its steps and its 32-token batch)
    (_draft_costs(0.006, (32, 0.070)), 32, 0.070),
    (_draft_costs(0.006, (32, 0.070)), 63, 0.006 + 62 * (0.070 - 0.006) / 31),
    (_draft_costs(0.006), 10, 0.060),  # no batch timed: as dear as steps
])
def test_a_catch_up_costs_what_a_batch_of_that_size_costs(costs, n, seconds):
    assert ModelPrice(costs).catch_up_s(n) == pytest.approx(seconds)


def test_a_priced_out_model_is_priced_again_later_and_later():
    p = ModelPrice(_draft_costs(1.0))
    probes = [i for i in range(1, 8 * REPROBE_MAX) if p.probe_due()]
    gaps = [b - a for a, b in zip([0] + probes, probes)]
    assert gaps[:5] == [REPROBE_FIRST, 2 * REPROBE_FIRST, 4 * REPROBE_FIRST, 8 * REPROBE_FIRST, 16 * REPROBE_FIRST]
    assert max(gaps) == REPROBE_MAX
    p.paid()  # it drafted on its price: the next probe after it goes out again comes soon
    assert [i for i in range(1, REPROBE_FIRST + 1) if p.probe_due()] == [REPROBE_FIRST]
    profile = CostProfile(json.loads(H200.read_text()), measured=CostModel())
    assert not ModelPrice(_draft_costs(1.0), profile=profile).can_reprice  # a profile's price does not move


@pytest.mark.parametrize("rates, step, token, row, max_len, gain, tokens", [
    # a sure model at a tenth of a step with rows at a tenth: every token pays 0.8 of a step
    ([1.0], 1.0, 0.1, 0.1, 3, 2.4, 4.0),
    # 0.5 a token: the first pays 0.5 - 0.2, the second 0.25 - 0.2, the third (0.125) does not
    ([0.5], 1.0, 0.1, 0.1, 8, 0.35, 1.75),
    # a model as dear as the target (SmolLM2's Q4_1 copy on this CPU): nothing pays
    ([0.9], 1.0, 0.9, 0.2, 8, 0.0, 1.0),
])
def test_proposal_gain(rates, step, token, row, max_len, gain, tokens):
    assert proposal_gain(rates, step, token, row, max_len) == pytest.approx((gain, tokens))


@pytest.mark.parametrize("behind, catch_up, gain, tokens, remaining, worth", [
    (2, 9.0, 0.0, 1.0, 5, True),  # the target's pending tokens: a steady feed, always fed
    (100, 0.2, 0.01, 2.0, 100, True),  # 50 more proposals at 10 ms each pay for 200 ms
    (100, 0.6, 0.01, 2.0, 100, False),  # ... but not for 600 ms
    (1200, 0.6, 0.01, 2.0, 4, False),  # a 1,200-token tool prompt caught up for 4 tokens: never
    (100, 1.0, 0.01, 2.0, None, True),  # an unknown length counts HORIZON tokens: 128 proposals, 1.28 s
])
def test_worth_catching_up(behind, catch_up, gain, tokens, remaining, worth):
    assert HORIZON == 256  # the last case assumes it
    assert worth_catching_up(behind, catch_up, gain, tokens, remaining) is worth


# -- the hybrid on a real tiny pair ------------------------------------------------------------------------------

def _costs(step: float = 0.010, row: float = 0.0002) -> CostModel:
    costs = CostModel()
    for n, r in [(1, 1), (1, 1), (4, 4), (8, 2), (16, 16), (16, 1), (24, 6)] * 3:
        costs.observe(n, r, step + row * n)
    costs._fit()
    return costs


@pytest.fixture
def pair(tiny_pair_paths):
    p = load_pair(*tiny_pair_paths, ctx=ContextSettings(n_ctx=512))
    yield p
    p.close()


def _hybrid(pair, costs, token_s=None):
    model = ModelDrafter(pair.draft_ctx, max_len=8, p_min=0.0, timings=pair.draft_timings)
    if token_s is not None:  # a first price as wrong as a busy machine or a cold GPU gives
        for _ in range(3):
            model.costs.observe(1, 1, token_s)
    return HybridDrafter(costs=costs, sources=[], schema=False, model=model), model


def _propose(h, n, start=0, remaining=None):
    """`n` proposals over a growing context; the last one's draft."""
    prompt = [1] + list(range(300, 340))
    draft = None
    for i in range(start, start + n):
        draft = h.propose(DraftRequest(prompt + [400 + j % 50 for j in range(i + 1)], 8,
                                       SamplingParams(temperature=0.0), None, None, remaining))
    return draft


def test_load_times_the_draft_steps_and_a_batch(pair):
    shapes = {(n, r) for n, r, _ in pair.draft_timings}
    assert (1, 1) in shapes and any(n >= 8 for n, _ in shapes)
    assert pair.draft_ctx.n_past == 0  # the timing left nothing in its cache


def test_a_priced_out_model_is_fed_nothing_and_priced_again_by_one_step(pair):
    # A made-up target step of a second: whatever the tiny draft really costs pays against it, while the wrong
    # first price ("a draft token costs 5 s") does not.
    h, model = _hybrid(pair, _costs(step=1.0), token_s=5.0)
    before = pair.draft_ctx.shapes.copy()
    _propose(h, REPROBE_FIRST - 1)
    assert "model" in h.switched_off and pair.draft_ctx.shapes == before  # not one decode while it sat out
    assert "5000.0 ms against a 1000.2 ms target step" in h.switched_off["model"]
    _propose(h, 1, start=REPROBE_FIRST - 1)  # the probe: one step where its cache ends, rolled back
    assert pair.draft_ctx.shapes - before == {(1, 1): 1} and pair.draft_ctx.n_past == 0
    assert h.model_price.token_s() < 0.5  # the probe's step replaced the wrong price
    _propose(h, 2, start=REPROBE_FIRST)
    call = model.last_call
    assert "model" not in h.switched_off and call.drafted > 0  # back in, on its real price
    # It caught up in one batch (the whole context it missed), and that batch is not a token's price.
    assert (len(pair.draft_ctx.tokens) >= 40) and h.model_price.token_s() < 0.5


def _profile(step: float, draft_step: float, draft_batch32: float) -> CostProfile:
    """A machine where the target steps at `step` and the draft at `draft_step`, a batch of 32 draft tokens taking
    `draft_batch32`: the policy's decisions then depend on nothing measured here."""
    target = {"step_s": step, "pass_s": {"1": step, "2": step * 1.1, "16": step * 2.0}}
    draft = {"step_s": draft_step, "pass_s": {"1": draft_step, "32": draft_batch32}}
    return CostProfile({"format": "localspec-cost-profile/1", "target": target, "draft": draft}, measured=_costs())


def test_a_catch_up_that_the_reply_cannot_win_back_keeps_the_model_out(pair):
    # Target 10 ms a step, draft 1 ms, catching up 32 tokens 20 ms: a proposal is worth about 5 ms.
    h, model = _hybrid(pair, _profile(0.010, 0.001, 0.020))
    before = pair.draft_ctx.shapes.copy()
    _propose(h, 3, remaining=2)  # two tokens left: catching up 44 tokens (27 ms) to draft them cannot pay
    assert "catching up the 44 tokens it missed would cost 27 ms" in h.switched_off["model"]
    assert pair.draft_ctx.shapes == before
    _propose(h, 1, start=3, remaining=200)  # a long reply ahead: worth it
    assert "model" not in h.switched_off and model.last_call.fed > STEADY_FEED


def test_the_decision_is_said_once(pair):
    h, model = _hybrid(pair, _costs(step=1.0), token_s=5.0)
    _propose(h, 3)
    assert list(h.take_notes()) == ["model"]
    _propose(h, 3, start=3)
    assert h.take_notes() == {}  # still off for the same reason: nothing new to say


def test_a_cost_profile_prices_the_draft_model_as_that_machine_would(pair):
    profile = CostProfile(json.loads(H200.read_text()), measured=_costs())
    assert 0 < profile.draft_step_s() < profile.single_token_s()  # the 0.5B draft against the 8B target
    h, model = _hybrid(pair, profile, token_s=5.0)  # this machine's (wrong) price is not what counts
    _propose(h, 2)
    assert h.model_price.token_s() == profile.draft_step_s() and "model" not in h.switched_off
    assert model.last_call.drafted > 0


def test_a_model_that_would_pay_at_a_likelier_acceptance_is_tried_now_and_then(pair):
    # Target 10 ms, draft 7.5 ms: at least 81% must be accepted, more than the prior 70%, less than PLAUSIBLE.
    h, model = _hybrid(pair, _profile(0.010, 0.0075, 0.020))
    before = pair.draft_ctx.shapes.copy()
    _propose(h, REPROBE_FIRST - 1)
    assert "at least 81% of them must be accepted to pay, and expected 70%" in h.switched_off["model"]
    assert pair.draft_ctx.shapes == before
    draft = _propose(h, 1, start=REPROBE_FIRST - 1)  # the try: it catches up and drafts, and its tokens are judged
    assert model.last_call.fed > STEADY_FEED and model.last_call.drafted > 0
    # ... by the target: they are in the proposal (priced at the acceptance it was tried for; at its own they
    # were cut, and a try then cost a catch-up and its steps and learned nothing).
    assert draft.origins.count("model") == model.last_call.drafted


def test_a_draft_model_priced_here_is_priced_again_by_a_step_never_tried(pair):
    # The same prices as above, measured on this machine (no profile): a step can price it again, and a try would
    # catch up the whole context (on the 2-core CPU 0.28-0.81 s of a SmolLM2 reply).
    h, model = _hybrid(pair, _costs(step=0.010), token_s=0.0075)
    before = pair.draft_ctx.shapes.copy()
    _propose(h, REPROBE_FIRST - 1)
    assert "must be accepted to pay, and expected 70%" in h.switched_off["model"]
    draft = _propose(h, 1, start=REPROBE_FIRST - 1)
    assert pair.draft_ctx.shapes - before == {(1, 1): 1} and pair.draft_ctx.n_past == 0  # one step, rolled back
    assert "model" not in draft.origins


@pytest.mark.parametrize("draft_step", [0.001, 0.004, 0.0075])
def test_the_model_drafts_only_the_tokens_the_cut_keeps(pair, draft_step):
    # A dearer draft step raises the acceptance a token needs, and the draft is cut sooner: the model makes only
    # the steps of the tokens that are kept, not its max_len (8) and then the cut.
    h, model = _hybrid(pair, _profile(0.010, draft_step, 0.020))
    calls = []
    for i in range(REPROBE_FIRST + 4):
        last = model.last_call
        draft = _propose(h, 1, start=i)
        if model.last_call is not last:  # asked in this proposal
            assert draft.origins.count("model") == model.last_call.drafted
            assert model.last_call.decodes == model.last_call.drafted - 1  # a step for each kept token after the first
            calls.append(model.last_call.drafted)
    assert calls and min(calls) < model.max_len

