"""The cost model behind the adaptive draft length: a few passes stalled by other processes must not skew it."""

import pytest

from localspec.speculative.costs import CostModel


def test_fit_recovers_costs_despite_stalls():
    c0, c1, c2 = 0.018, 0.0026, 0.0028  # per pass, per row, per logits row (Gemma-3-270M here)
    cm = CostModel()
    shapes = [(1, 1), (8, 2), (16, 4), (24, 6), (12, 12), (30, 3)]
    for rep in range(20):
        for n, r in shapes:
            cm.observe(n, r, c0 + c1 * n + c2 * r)
    for n, r in shapes[:4]:
        cm.observe(n, r, 2.0)  # a stall: another process took the cores for two seconds
    got = cm.coefficients()
    assert got == pytest.approx((c0, c1, c2), rel=0.05)
    assert cm.single_token_s() == pytest.approx(c0 + c1 + c2, rel=0.01)
    assert cm.cost(17, 17) - cm.cost(16, 16) == pytest.approx(c1 + c2, rel=0.05)


def test_no_fit_before_two_batch_sizes():
    cm = CostModel()
    assert cm.coefficients() is None and cm.cost(8) == 0.0
    cm.observe(1, 1, 0.02)
    assert not cm.ready
    cm.observe(8, 8, 0.05)
    assert cm.ready


# -- the curve: each row count priced by its own timings ----------------------------------------------------------

H200 = {1: 1.0, 2: 0.92, 4: 1.11, 8: 1.54, 16: 1.82, 32: 2.22, 64: 2.89}  # a pass of k rows / a single step
STEP = 0.00384  # the 8B shape's single step on the H200 (llama-bench tg)


def h200(logits_row: float = 0.0) -> CostModel:
    """The H200's 8B curve, timed as verification sees it: every row count with logits for one row and for all."""
    cm = CostModel()
    for _ in range(3):
        for k, x in H200.items():
            cm.observe(k, 1, STEP * x)
            cm.observe(k, k, STEP * x + logits_row * (k - 1))
    cm._fit()
    return cm


@pytest.mark.parametrize("rows,expected", [
    (1, 1.0), (2, 0.92), (4, 1.11), (8, 1.54), (16, 1.82), (32, 2.22), (64, 2.89),  # measured: exactly
    (3, (0.92 + 1.11) / 2),  # between: linear
    (24, (1.82 + 2.22) / 2),
    (96, 2.89 + 32 * (2.89 - 2.22) / 32),  # beyond: the last segment's slope
])
def test_pass_priced_by_its_row_count(rows, expected):
    cm = h200()
    assert cm.pass_s(rows, 1) == pytest.approx(STEP * expected, rel=1e-9)
    assert cm.pass_s(rows) == pytest.approx(STEP * expected, rel=1e-9)  # logits rows cost nothing extra here
    assert cm.cost(rows, 1) == cm.pass_s(rows, 1)


def test_a_line_would_misprice_the_h200():
    # What the old line fit said for 16 rows against the curve: the line is off by more than 10%.
    cm = h200()
    c0, c1, c2 = cm.coefficients()
    assert abs(c0 + 16 * c1 + c2 - cm.pass_s(16, 1)) > 0.1 * cm.pass_s(16, 1)


def test_logits_rows_priced_on_top_of_the_curve():
    cm = h200(logits_row=0.0002)
    assert cm.coefficients()[2] == pytest.approx(0.0002, rel=0.02)
    assert cm.pass_s(8, 1) == pytest.approx(STEP * 1.54, rel=0.01)
    assert cm.pass_s(8, 8) == pytest.approx(STEP * 1.54 + 7 * 0.0002, rel=0.01)


@pytest.mark.parametrize("k,expected", [
    (2, 0.0),  # a pass of 2 costs less than a single step on the H200: the second row is free, not negative
    (4, (1.11 - 0.92) / 2),  # between 2 and 4 rows: half the segment per row
    (16, (1.82 - 1.54) / 8),
    (17, (2.22 - 1.82) / 16),
    (64, (2.89 - 2.22) / 32),
])
def test_marginal_row(k, expected):
    assert h200().marginal_row_s(k) == pytest.approx(STEP * expected, abs=1e-12)


def test_single_step_is_its_own_median():
    cm = h200()
    assert cm.single_token_s() == pytest.approx(STEP)
    assert cm.marginal_row_s(1) == cm.single_token_s()


def test_prices_follow_the_machine_within_a_window():
    cm = CostModel(window=8)
    for _ in range(8):
        for k in (1, 4, 16):
            cm.observe(k, k, 0.01 + 0.001 * k)
    assert cm.pass_s(4) == pytest.approx(0.014)
    for _ in range(5):  # the machine slows down (a GPU clocking down, another job): most of the window now says so
        for k in (1, 4, 16):
            cm.observe(k, k, 0.02 + 0.002 * k)
    cm._fit()
    assert cm.pass_s(4) == pytest.approx(0.028) and cm.single_token_s() == pytest.approx(0.022)


def test_a_shape_the_run_stops_using_keeps_its_price():
    cm = CostModel(window=4)
    for k in (1, 8, 32):
        cm.observe(k, k, 0.01 * k)
    for _ in range(50):  # only single steps for a long while
        cm.observe(1, 1, 0.01)
    cm._fit()
    assert cm.pass_s(32) == pytest.approx(0.32)


@pytest.mark.parametrize("shapes", [
    [(1, 1), (4, 4), (8, 8), (16, 16)],  # logits for every row: rows and logits rows cannot be told apart
    [(1, 1), (4, 1), (16, 1)],  # logits for one row only
])
def test_fit_with_collinear_shapes(shapes):
    cm = CostModel()
    for n, r in shapes:
        cm.observe(n, r, 0.02 + 0.002 * n)
    cm._fit()
    c0, c1, c2 = cm.coefficients()
    assert c0 == pytest.approx(0.02) and c1 + c2 == pytest.approx(0.002)
    if all(r == 1 for _, r in shapes):
        assert c2 == 0.0  # never half the pass's fixed cost
    assert cm.pass_s(12) == pytest.approx(0.02 + 0.002 * 12)


def test_calibrate_prices_every_shape_in_steady_state_and_rolls_back(tiny_target):
    from localspec.runtime.context import Context, ContextSettings
    from localspec.runtime.model import Model, ModelSettings
    from localspec.speculative.costs import CALIBRATION

    model = Model(tiny_target, ModelSettings(n_gpu_layers=0))
    ctx = Context(model, ContextSettings(n_ctx=256, n_batch=64, n_threads=1))
    prompt = model.tokenize("read the file name")
    ctx.decode(prompt)
    cm = CostModel()
    cm.calibrate(ctx)
    assert ctx.tokens == prompt  # every timed decode rolled back
    assert cm.ready and {n for n, _ in cm.pass_curve()} == {n for n, _ in CALIBRATION}
    assert all(len(cm._shapes[s]) == 2 * CALIBRATION.count(s) for s in set(CALIBRATION))  # 2 repeats, timed
    assert 0 < cm.single_token_s() < cm.pass_s(32)
    ctx.close()
    model.close()
