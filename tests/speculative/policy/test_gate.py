"""Drafters that do not pay sit out: the hybrid rests a source whose lookups cost more than its accepted tokens
saved, says so in `switched_off`, and tries it again a window later (pure policy: no model needed)."""

import time

from localspec.speculative.costs import CostModel
from localspec.speculative.draft import CandidateDrafter, DraftRequest
from localspec.speculative.policy.gate import GATE_WINDOW, MIN_COST_SHARE, PROSE_WINDOW
from localspec.speculative.policy.hybrid import PROSE, HybridDrafter
from localspec.speculative.sampling import SamplingParams
from tests.speculative.fakes import Script


class Source(CandidateDrafter):
    """Proposes `toks` (where the context ends with `after`, if given); each lookup takes `cost` seconds (a source
    whose lookups cost under MIN_COST_SHARE of a step is never rested)."""

    def __init__(self, name, toks, after=None, cost=0.001):
        self.name, self.toks, self.after, self.asked, self.cost = name, toks, after, 0, cost

    def candidate(self, context, max_len, constraint=None):
        self.asked += 1
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.cost:
            pass
        if self.after is not None and context[-1] != self.after:
            return None
        return self.found(self.toks, 8)


def _costs() -> CostModel:
    costs = CostModel()
    for n in (1, 1, 4, 8, 16):
        costs.observe(n, n, 0.02 + 0.002 * n)
    return costs


def _pair():
    idle, good = Source("ngram", [9]), Source("history", [5, 6, 7], after=3, cost=0.0)
    h = HybridDrafter(costs=_costs(), sources=[good, idle], schema=False)
    h.rates.learned.update({(k, b): 0.9 for k in ("history", "history" + PROSE) for b in (-1, 1, 2, 3, 4)})  # it is right
    return h, idle


def test_in_prose_a_source_that_saves_nothing_rests_longer_each_time():
    h, idle = _pair()
    req = DraftRequest([1, 2, 3], 8, SamplingParams())
    w = PROSE_WINDOW
    for _ in range(w - 1):
        d = h.propose(req)
        h.observe(d, 3)  # the good source's tokens are accepted, the idle one's guess after them is not
    assert idle.asked >= w - 1 and not h.switched_off
    asked = idle.asked
    d = h.propose(req)  # a window has passed: the idle source is rested for two windows, the paying one is not
    assert set(h.switched_off) == {"ngram (prose)"} and f"off for {2 * w} steps" in h.switched_off["ngram (prose)"]
    for _ in range(2 * w - 1):
        h.observe(d, 3)
        d = h.propose(req)
        assert d.tokens == [5, 6, 7]  # and nothing after it
    assert idle.asked == asked
    h.observe(d, 3)
    d = h.propose(req)  # tried again; still not paying: then it sits out twice as long, and the note stays meanwhile
    assert idle.asked > asked and "ngram (prose)" in h.switched_off
    for _ in range(w):
        h.observe(d, 3)
        d = h.propose(req)
    assert f"off for {4 * w} steps" in h.switched_off["ngram (prose)"]


def test_under_a_grammar_a_source_that_saves_nothing_sits_out_one_window():
    h, idle = _pair()
    req = DraftRequest([1, 2, 3], 8, SamplingParams(), Script([{5, 6, 7, 9}] * 8))
    for _ in range(GATE_WINDOW):
        d = h.propose(req)
        h.observe(d, 3)
    assert set(h.switched_off) == {"ngram"} and f"off for {GATE_WINDOW} steps" in h.switched_off["ngram"]
    asked = idle.asked
    for _ in range(GATE_WINDOW - 1):
        d = h.propose(req)
        h.observe(d, 3)
    assert idle.asked == asked
    h.propose(req)
    assert idle.asked > asked  # back after one window


def test_under_a_grammar_a_source_the_cut_never_let_through_is_not_rested():
    """On a busy machine a row can cost as much as a step: the cut then drafts nothing, and no source is to blame;
    under a grammar a source may speak at one place only (which tool), so it stays on."""
    src = Source("ngram", [9, 9])
    h = HybridDrafter(costs=_costs(), sources=[src], schema=False)
    h.rates.learned.update({("ngram", b): 0.01 for b in (-2, -1, 1, 2, 3, 4)})  # far below what a row costs
    grammar = Script([{8, 9}] * 4)
    for _ in range(2 * GATE_WINDOW):
        assert not h.propose(DraftRequest([1, 2, 3], 8, SamplingParams(), grammar)).tokens
    assert not h.switched_off and src.asked == 2 * GATE_WINDOW


def test_in_prose_a_lookup_that_never_pays_rests_even_if_never_drafted():
    """In prose a lookup whose guesses the cut never lets through is pure cost: it sits out the next window."""
    src = Source("ngram", [9, 9])
    h = HybridDrafter(costs=_costs(), sources=[src], schema=False)
    h.rates.learned.update({("ngram" + PROSE, b): 0.01 for b in (-2, -1, 1, 2, 3, 4)})  # far below what a row costs
    for _ in range(PROSE_WINDOW + 5):
        assert not h.propose(DraftRequest([1, 2, 3], 8, SamplingParams())).tokens
    assert set(h.switched_off) == {"ngram (prose)"} and src.asked == PROSE_WINDOW - 1  # one lookup a proposal


def test_seeded_sampling_never_gates():
    """Seeded sampling must replay exactly, so drafting may not depend on measured times."""
    idle = Source("ngram", [9])
    h = HybridDrafter(costs=_costs(), sources=[idle], schema=False)
    req = DraftRequest([1, 2, 3], 8, SamplingParams(temperature=0.8, seed=1))
    for _ in range(3 * GATE_WINDOW):
        h.propose(req)
    assert idle.asked >= 3 * GATE_WINDOW and not h.switched_off


def test_a_lookup_that_costs_next_to_nothing_is_never_rested():
    """A source that keeps earlier generations finds nothing in a reply that does not repeat one, at a few
    microseconds a lookup: resting it would save nothing and lose the request that does repeat."""
    cheap = Source("ngram", [9, 9], cost=0.0)
    h = HybridDrafter(costs=_costs(), sources=[cheap], schema=False)
    h.rates.learned.update({("ngram" + PROSE, b): 0.01 for b in (-2, -1, 1, 2, 3, 4)})  # never drafted
    for _ in range(8 * PROSE_WINDOW):
        h.propose(DraftRequest([1, 2, 3], 8, SamplingParams()))
    assert not h.switched_off and cheap.asked == 8 * PROSE_WINDOW
    assert MIN_COST_SHARE * 0.022 > 1e-4  # what it may cost a step here (0.22 ms) is far above a dict lookup


def test_in_prose_a_source_whose_guesses_fail_stops_within_a_few_passes_and_comes_back_with_new_text():
    """Issue 34: the n-gram source drafted 72 prose tokens of a 128-token reply and 15 were accepted. Its lookups
    were free, so only its rows cost: they count against what it saved, and it stops within a window."""
    wrong = Source("ngram", [9, 9, 9], cost=0.0)
    h = HybridDrafter(costs=_costs(), sources=[wrong], schema=False)
    h.rates.learned.update({("ngram" + PROSE, b): 0.9 for b in (-2, -1, 1, 2, 3, 4)})  # it looks sure of itself
    drafted = []
    for _ in range(4 * PROSE_WINDOW):
        d = h.propose(DraftRequest([1, 2, 3], 8, SamplingParams()))
        drafted.append(len(d))
        h.observe(d, 0)  # never right
    # Drafted in its first window (its rates fall with each rejection until a guess no longer pays a row), then
    # rested for two windows, then tried again, then rested twice as long.
    assert all(drafted[:PROSE_WINDOW - 1]) and not any(drafted[PROSE_WINDOW:3 * PROSE_WINDOW - 1])
    assert "ngram (prose)" in h.switched_off and "rows cost" in h.switched_off["ngram (prose)"]
    asked = wrong.asked
    h.finish([1, 2, 3, 4], 3)  # a new generation: new text, the source is looked up again at once
    h.propose(DraftRequest([5, 6, 7], 8, SamplingParams()))
    assert wrong.asked > asked and "ngram (prose)" not in h.switched_off


def test_a_new_generation_does_not_end_the_draft_models_rest():
    """A rested draft model comes back only when catching up pays (policy/model_price.py), not at every new
    request: on `run --tools` that would catch up a 1,200-token tool prompt at each step."""
    h = HybridDrafter(costs=_costs(), schema=False)
    gate = h._gates[True]
    gate.rest["model"], gate.rest["ngram"] = 50, 50
    h.finish([1, 2], 1)
    assert gate.rest == {"model": 50}
