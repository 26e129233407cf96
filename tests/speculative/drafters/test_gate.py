"""Drafters that do not pay sit out: the hybrid rests a source whose lookups cost more than its accepted tokens
saved, says so in `switched_off`, and tries it again a window later (pure policy: no model needed)."""

from localspec.speculative.costs import CostModel
from localspec.speculative.draft import CandidateDrafter, DraftRequest
from localspec.speculative.drafters.hybrid import _GATE_WINDOW, HybridDrafter
from localspec.speculative.sampling import SamplingParams


class Source(CandidateDrafter):
    def __init__(self, name, toks, after=None):
        self.name, self.toks, self.after, self.asked = name, toks, after, 0

    def candidate(self, context, max_len, constraint=None):
        self.asked += 1
        if self.after is not None and context[-1] != self.after:
            return [], 0
        return list(self.toks), 8


def _costs() -> CostModel:
    costs = CostModel()
    for n in (1, 1, 4, 8, 16):
        costs.observe(n, n, 0.02 + 0.002 * n)
    return costs


def test_a_source_that_saves_nothing_rests_and_is_tried_again():
    idle, good = Source("ngram", [9]), Source("history", [5, 6, 7], after=3)
    h = HybridDrafter(costs=_costs(), schema=False, ngram=idle, history=good)
    req = DraftRequest([1, 2, 3], 8, SamplingParams())
    for _ in range(_GATE_WINDOW - 1):
        d = h.propose(req)
        h.observe(d, 3)  # the good source's tokens are accepted, the idle one's guess after them is not
    assert idle.asked >= _GATE_WINDOW - 1 and "ngram" not in h.switched_off
    d = h.propose(req)  # a window has passed: the idle source is rested, the paying one is not
    assert set(h.switched_off) == {"ngram"} and "ms a step" in h.switched_off["ngram"]
    asked = idle.asked
    for _ in range(_GATE_WINDOW - 1):
        h.observe(d, 3)
        d = h.propose(req)
    assert idle.asked == asked and d.tokens == [5, 6, 7]  # and nothing after it
    h.observe(d, 3)
    h.propose(req)  # the next window: tried again
    assert idle.asked > asked and "ngram" not in h.switched_off


def test_a_source_the_cut_never_let_through_is_not_rested():
    """On a busy machine a row can cost as much as a step: the cut then drafts nothing, and no source is to blame."""
    src = Source("ngram", [9, 9])
    h = HybridDrafter(costs=_costs(), schema=False, ngram=src)
    h.rates.update({("ngram", b): 0.01 for b in (-2, -1, 1, 2, 3, 4)})  # far below what a row costs
    for _ in range(2 * _GATE_WINDOW):
        assert not h.propose(DraftRequest([1, 2, 3], 8, SamplingParams())).tokens
    assert not h.switched_off


def test_seeded_sampling_never_gates():
    """Seeded sampling must replay exactly, so drafting may not depend on measured times."""
    idle = Source("ngram", [9])
    h = HybridDrafter(costs=_costs(), schema=False, ngram=idle)
    req = DraftRequest([1, 2, 3], 8, SamplingParams(temperature=0.8, seed=1))
    for _ in range(3 * _GATE_WINDOW):
        h.propose(req)
    assert idle.asked >= 3 * _GATE_WINDOW and not h.switched_off
