"""A head is priced like the draft model: its steady-state step at load, then its own calls (ModelCall), or a cost
profile's head price where one is given (`--cost-profile`), which also prices the head's decodes when a run is
projected onto that machine."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import DraftingConfig
from localspec.speculative.profile import CostProfile, projected_s
from localspec.speculative.stats import Stats
from tests.head_helpers import head_profile

H200 = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu" / "h200-8b-q4_0+0.5b-q8_0.json"


def test_a_profile_prices_heads_and_projects_their_decodes():
    data = json.loads(H200.read_text())
    data["heads"] = {"mtp": {"step_s": 0.0006, "token_s": 0.0006, "pass_s": {"1": 0.0006, "4": 0.0008, "16": 0.0012}}}
    p = CostProfile(data)
    assert p.head_step_s("mtp") == 0.0006 and p.head_step_s("eagle3") == 0.0
    assert p.head_pass_s(4, 4) == pytest.approx(0.0008) and CostProfile(json.loads(H200.read_text())).head_pass_s(4) is None
    s = Stats(generated_tokens=10, target_passes=4, wall_s=1.0, decode_s=0.6, head_decode_s=0.3,
              pass_shapes=Counter({(3, 3): 4}), head_shapes=Counter({(1, 1): 6, (4, 0): 2}))
    passes = 4 * p.pass_s(3, 3)
    heads = 6 * p.head_pass_s(1, 1) + 2 * p.head_pass_s(4, 0)
    # The head's measured 0.3 s is replaced by the profile's price of its decodes; the rest (0.1 s) is bookkeeping.
    assert projected_s(s, p) == pytest.approx(passes + heads + 0.1)
    d = s.to_dict()
    assert d["head_shapes"] == [[1, 1, 6], [4, 0, 2]] and d["head_decode_s"] == 0.3
    assert "head_shapes" not in Stats().to_dict()  # a run without a head says nothing of one


def test_the_hybrid_prices_a_head_by_its_load_time_step_or_the_profiles(head_files):
    pair = load_pair(head_files.qwen35, ctx=ContextSettings(n_ctx=512, n_batch=16, n_threads=1), heads=True)
    try:
        assert pair.head is not None and pair.head.step_s > 0  # timed at load, in steady state
        engine = build_engine(pair, DraftingConfig(drafters=("head",), draft_p_min=0.0))
        (head, price), = engine.drafter.heads
        assert price.token_s() == pytest.approx(pair.head.step_s) and price.fixed_s == 0.0
        profile = head_profile(token_s=0.002)
        engine = build_engine(pair, DraftingConfig(drafters=("head",), draft_p_min=0.0), costs=profile)
        (head, price), = engine.drafter.heads
        assert price.token_s() == 0.002  # that machine's price, whatever this one measures
        engine._calibrate = False
        stats = engine.generate(pair.target.tokenize("read the file name"), GenParams(max_tokens=16)).stats
        assert stats.head_shapes and stats.head_decode_s > 0  # its decodes, for the projection
        assert head.last_call.drafted > 0
        assert price.token_s() == 0.002  # its own decodes, measured here, do not move that price
    finally:
        pair.close()
