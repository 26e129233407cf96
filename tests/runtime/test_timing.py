"""Prices are taken in steady state: timings settle before they count (the first decodes of a context cost more)."""

from __future__ import annotations

import pytest

from localspec.runtime.timing import steady_median, steady_state


@pytest.mark.parametrize("script,steps,median", [
    ([9.0, 3.0, 1.0, 1.02, 0.99, 5.0], 5, 1.0),  # settles at the 5th step: three within 10%
    ([1.0, 1.0, 1.0], 3, 1.0),  # already steady
    ([5.0, 1.0, 2.0, 1.0, 2.0, 1.0], 6, 1.0),  # never settles: stops at max_steps, median of the last three
])
def test_steady_state(script, steps, median):
    it = iter(script)
    times = steady_state(lambda: next(it), max_steps=6)
    assert len(times) == steps and steady_median(times) == median


def test_warm_up_prices_the_draft_step_in_steady_state(tiny_target):
    from localspec.runtime.context import Context, ContextSettings
    from localspec.runtime.model import Model, ModelSettings
    from localspec.runtime.pair import warm_up

    model = Model(tiny_target, ModelSettings(n_gpu_layers=0))
    ctx = Context(model, ContextSettings(n_ctx=64, n_batch=32, n_threads=1))
    spent = warm_up(ctx)
    assert 0 < spent < 0.05  # a tiny model's step: well under a millisecond unless the machine is very busy
    assert ctx.n_past == 0  # left empty for the draft's first catch-up
    ctx.close()
    model.close()
