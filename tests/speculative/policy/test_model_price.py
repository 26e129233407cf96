"""The draft model's price (policy/model_price.py): pure arithmetic in table tests, then the hybrid on a real tiny
pair: a model priced out by a wrong first price is tried again and let back in by what it really costs, and a
cost profile's draft step prices it as that machine would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.costs import CostModel
from localspec.speculative.draft import DraftRequest
from localspec.speculative.policy.hybrid import HybridDrafter
from localspec.speculative.policy.model_price import EMA, REPROBE_FIRST, REPROBE_MAX, STEADY_FEED, ModelCall, ModelPrice
from localspec.speculative.profile import CostProfile
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.sources.draft_model import ModelDrafter

H200 = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu" / "h200-8b-q4_0+0.5b-q8_0.json"


@pytest.mark.parametrize("start, call, price", [
    # steady state (the target's token fed, then single steps): feeding and steps over the tokens drafted
    (0.0, ModelCall(fed=1, feed_s=0.002, decodes=3, steps_s=0.006, drafted=4), 0.002),
    # nothing drafted (first guess under p_min): the feeding counts as one token's cost
    (0.0, ModelCall(fed=2, feed_s=0.003, decodes=0, steps_s=0.0, drafted=0), 0.003),
    # a catch-up of 300 tokens after sitting out: only its single steps price a token
    (0.0, ModelCall(fed=300, feed_s=0.5, decodes=4, steps_s=0.004, drafted=5), 0.001),
    # a catch-up with no single step says nothing: the price stays
    (0.004, ModelCall(fed=300, feed_s=0.5, decodes=0, steps_s=0.0, drafted=1), 0.004),
    # a running price moves by EMA towards the new measurement
    (0.010, ModelCall(fed=1, feed_s=0.0, decodes=1, steps_s=0.002, drafted=1), (1 - EMA) * 0.010 + EMA * 0.002),
])
def test_observe(start, call, price):
    p = ModelPrice(start)
    p.observe(call)
    assert p.token_s == pytest.approx(price)
    assert STEADY_FEED == 2  # the cases above assume it


def test_price_prefers_the_profile_then_the_measurement_then_the_guess():
    assert ModelPrice(0.0).price(0.5) == 0.5
    assert ModelPrice(0.01).price(0.5) == 0.01
    fixed = ModelPrice(0.01, fixed_s=0.001)
    fixed.observe(ModelCall(fed=1, feed_s=1.0, drafted=1))
    assert fixed.price(0.5) == 0.001 and fixed.token_s == 0.01  # a profile's price is not moved by this machine


def test_a_translated_drafts_round_trip_is_part_of_its_price():
    """A draft of another vocabulary (sources/translated.py) pays its translation per drafted token, on top of its
    steps: measured here, and added to a profile's price too (the translation runs on that machine's CPU)."""
    p = ModelPrice(0.0)
    p.observe(ModelCall(fed=1, feed_s=0.002, decodes=3, steps_s=0.006, drafted=4, translate_s=0.001))
    assert p.token_s == pytest.approx(0.002) and p.translate_s == pytest.approx(0.00025)
    assert p.price(0.5) == pytest.approx(0.00225)
    fixed = ModelPrice(0.0, fixed_s=0.001)
    fixed.observe(ModelCall(fed=1, feed_s=1.0, drafted=0, translate_s=0.0004))  # nothing drafted: one token's worth
    assert fixed.price(0.5) == pytest.approx(0.0014)
    assert ModelPrice(0.01).price(0.5) == 0.01  # a draft of the target's own vocabulary translates nothing


def test_a_priced_out_model_is_tried_again_later_and_later():
    p = ModelPrice(1.0)
    tries = [i for i in range(1, 8 * REPROBE_MAX) if p.sat_out()]
    gaps = [b - a for a, b in zip([0] + tries, tries)]
    assert gaps[:5] == [REPROBE_FIRST, 2 * REPROBE_FIRST, 4 * REPROBE_FIRST, 8 * REPROBE_FIRST, 16 * REPROBE_FIRST]
    assert max(gaps) == REPROBE_MAX
    p.paid()  # it drafted on its price: the next try after it goes out again comes soon
    assert [i for i in range(1, REPROBE_FIRST + 1) if p.sat_out()] == [REPROBE_FIRST]
    assert not any(ModelPrice(1.0, fixed_s=1.0).sat_out() for _ in range(2 * REPROBE_MAX))


# -- the hybrid on a real tiny pair ------------------------------------------------------------------------------

def _costs(step: float = 0.010, row: float = 0.0002) -> CostModel:
    costs = CostModel()
    for n, r in [(1, 1), (1, 1), (4, 4), (8, 2), (16, 16), (16, 1), (24, 6)] * 3:
        costs.observe(n, r, step + row * n)
    costs._fit()
    return costs


@pytest.fixture(scope="module")
def pair(tiny_pair_paths):
    p = load_pair(*tiny_pair_paths, ctx=ContextSettings(n_ctx=512))
    yield p
    p.close()


def _hybrid(pair, costs, token_s):
    model = ModelDrafter(pair.draft_ctx, max_len=8, p_min=0.0)
    return HybridDrafter(costs=costs, sources=[], schema=False, model=model, model_token_s=token_s), model


def _propose(h, n):
    prompt = [1] + list(range(300, 340))
    for i in range(n):
        h.propose(DraftRequest(prompt + [400 + i % 50], 8, SamplingParams(temperature=0.0), None, None))


def test_a_wrong_first_price_is_corrected_by_a_later_try(pair):
    # A made-up target step of a second: whatever the tiny draft really costs on a busy machine pays against it,
    # while the wrong first price ("a draft token costs 5 s") does not.
    h, model = _hybrid(pair, _costs(step=1.0), token_s=5.0)
    _propose(h, REPROBE_FIRST - 1)
    assert "model" in h.switched_off and model.last_call.drafted == 0 and model.last_call.fed == 0  # never ran
    _propose(h, 1)  # the try: it runs once and is priced by its real single steps (the catch-up is not counted)
    call = model.last_call
    assert call.fed > STEADY_FEED and call.decodes and h.model_price.token_s == pytest.approx(call.steps_s / call.decodes)
    _propose(h, 3)
    assert "model" not in h.switched_off and model.last_call.drafted > 0  # back in: it drafts on its price


def test_a_cost_profile_prices_the_draft_model_as_that_machine_would(pair):
    profile = CostProfile(json.loads(H200.read_text()), measured=_costs())
    assert 0 < profile.draft_step_s() < profile.single_token_s()  # the 0.5B draft against the 8B target
    h, model = _hybrid(pair, profile, token_s=5.0)  # this machine's (wrong) price is not what counts
    _propose(h, 2)
    assert h.model_price.price(0.0) == profile.draft_step_s() and "model" not in h.switched_off
    assert model.last_call.drafted > 0


def test_a_try_replaces_the_price_that_kept_the_model_out():
    p = ModelPrice(5.0)
    p.observe(ModelCall(fed=300, feed_s=0.5, decodes=4, steps_s=0.004, drafted=5), anew=True)
    assert p.token_s == pytest.approx(0.001)
