"""Rows priced at the context depth they run at (issue 34: calibrated on a short cache, rows under 1,205 tokens of
tool definitions cost three times their price, and prose guesses right one time in six kept drafting)."""

import pytest

from localspec.speculative.costs import CostModel
from localspec.speculative.depth_scale import DEPTH_GAP, DepthScale

BASE = 16
STEP, ROW = 0.0094, 0.0016  # SmolLM2-135M F16 on this CPU near the calibration depth: a step, each row beyond it
DEEP, DEEP_STEP, DEEP_ROW = 1205, 0.0146, 0.0032  # ... under `run --tools`'s prompt


def calibrated() -> CostModel:
    cm = CostModel()
    for _ in range(2):
        for k in (1, 2, 4, 8, 16):
            cm.observe(k, k, STEP + ROW * (k - 1))
    cm.calibrated_at(BASE, STEP)
    return cm


@pytest.mark.parametrize("depth,factor", [
    (BASE, 1.0),  # at the calibration: priced as calibrated
    (DEEP, 2.0),  # where it was learned
    ((BASE + DEEP) / 2, 1.5),  # and every depth between, and beyond (a line through both)
    (2 * DEEP - BASE, 3.0),
])
def test_factor_from_one_deep_pass(depth, factor):
    ds = DepthScale()
    ds.calibrated_at(BASE)
    ds.learn(DEEP, 2 * 0.01, 0.01)
    assert ds.factor(depth) == pytest.approx(factor)


@pytest.mark.parametrize("learned", [
    [],  # nothing run far from the calibration yet
    [(BASE + DEPTH_GAP - 1, 0.05, 0.01)],  # near it: noise, not depth
    [(DEEP, 0.05, 0.0)],  # a shape the curve prices at no extra
])
def test_nothing_learned_keeps_the_curve(learned):
    ds = DepthScale()
    ds.calibrated_at(BASE)
    for args in learned:
        ds.learn(*args)
    assert ds.factor(DEEP) == 1.0


def test_uncalibrated_never_scales():
    ds = DepthScale()
    ds.learn(DEEP, 0.05, 0.01)
    assert ds.factor(DEEP) == 1.0 and not ds.far(DEEP)


def test_a_stalled_pass_does_not_move_the_factor():
    ds = DepthScale()
    ds.calibrated_at(BASE)
    for _ in range(5):
        ds.learn(DEEP, 0.02, 0.01)
    ds.learn(DEEP, 2.0, 0.01)  # another process took the cores for two seconds
    ds.learn(DEEP, 0.0, 0.01)
    assert ds.factor(DEEP) == pytest.approx(2.0)


def test_rows_deep_in_the_context_cost_what_they_cost_there():
    cm = calibrated()
    for _ in range(5):
        cm.observe(1, 1, DEEP_STEP, DEEP)  # single steps follow the depth by their own timings
    assert cm.single_token_s() == pytest.approx(DEEP_STEP)
    assert cm.pass_s(8) == pytest.approx(DEEP_STEP + 7 * ROW)  # nothing learned: the calibration's rows
    cm.observe(8, 8, DEEP_STEP + 7 * DEEP_ROW, DEEP)  # one drafted pass there
    assert cm.pass_s(8) == pytest.approx(DEEP_STEP + 7 * DEEP_ROW)
    assert cm.pass_s(4) == pytest.approx(DEEP_STEP + 3 * DEEP_ROW)
    assert cm.marginal_row_s(5) == pytest.approx(DEEP_ROW)
    c0, c1, c2 = cm.coefficients()
    assert c1 + c2 == pytest.approx(DEEP_ROW)
    cm.observe(1, 1, STEP, BASE + 4)  # a short request again: the curve as calibrated, nothing overwritten
    assert cm.pass_s(16, 16) - cm.single_token_s() == pytest.approx(15 * ROW, rel=0.2)


def test_deep_passes_are_not_mixed_into_the_calibrated_curve():
    cm = calibrated()
    for _ in range(40):
        cm.observe(8, 8, 0.5, DEEP)  # far from the calibration: they teach the depth, not the shape's price
    cm.observe(1, 1, STEP, BASE)
    assert cm.pass_s(8) < 0.5
    assert cm.pass_curve()[0] == (1, pytest.approx(STEP))
