"""The prose screen on its own (policy/prose_screen.py); the hybrid's use of it: test_hybrid.py."""

from __future__ import annotations

import pytest

from localspec.speculative.policy.pricing import Pricing
from localspec.speculative.policy.prose_screen import RETRY_AFTER, ProseScreen
from localspec.speculative.policy.rates import AcceptanceRates
from tests.speculative.policy.test_hybrid import CPU_CURVE, _profile

KEYS = [("ngram:prose", -1), ("ngram:prose", 1)]


def _screen() -> ProseScreen:
    rates = AcceptanceRates()
    return ProseScreen(Pricing(_profile(CPU_CURVE), rates), rates)


@pytest.mark.parametrize("probs, rows_before, pays", [
    ([0.25, 0.175], 0, False),  # 0.425 steps saved for a pass 4.0 ms (0.55 steps) dearer
    ([0.6, 0.5], 0, True),
    ([0.25, 0.175], 3, True),  # after 3 rows the next two add 0.5 ms: cheap
])
def test_pays_by_the_pass_curve(probs, rows_before, pays):
    assert _screen().pays([20, 21], probs, KEYS, rows_before) is pays


def test_only_the_first_guess_left_out_of_a_draft_is_judged():
    screen = _screen()
    screen.judge([0])
    assert not screen.pays([20, 21], [0.05, 0.02], KEYS, 2) and screen.shadow is None  # after other rows
    assert not screen.pays([20, 21], [0.25, 0.175], KEYS, 0) and screen.shadow == (1, [20, 21], KEYS)


def test_a_likely_guess_is_let_through_once_in_retry_after():
    screen = ProseScreen(Pricing(_profile({k: 0.01 * k for k in CPU_CURVE}), AcceptanceRates()), AcceptanceRates())
    verdicts = [screen.pays([20, 21], [0.9, 0.8], KEYS, 0) for _ in range(2 * RETRY_AFTER)]
    assert [i + 1 for i, v in enumerate(verdicts) if v] == [RETRY_AFTER, 2 * RETRY_AFTER]
