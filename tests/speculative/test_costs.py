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
