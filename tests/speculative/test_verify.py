"""The verifier on literal logits rows: which drafted tokens are kept and which token the target adds, greedy and
sampled, with forced rows and a grammar. No model: rows are arrays (tests/speculative/test_engine.py checks the
same code end to end on llama.cpp)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from localspec.speculative.draft import Draft
from localspec.speculative.sampling import Dist, SamplingParams, filtered_dist
from localspec.speculative.verify import TargetPolicy, Verdict, verify, verify_greedy, verify_sampled
from tests.speculative.fakes import Script

V = 8  # vocabulary size


def onehot_rows(*argmaxes: int):
    """Rows whose argmax is the given token, looked up by row index (what Context.logits does)."""
    rows = [np.where(np.arange(V) == t, 5.0, 0.0).astype(np.float32) for t in argmaxes]
    read: list[int] = []

    def logits(i: int) -> np.ndarray:
        read.append(i)
        return rows[i]

    return logits, read


def draft_of(tokens, forced=None, next_forced=None) -> Draft:
    d = Draft()
    for i, t in enumerate(tokens):
        d.add(t, "ngram", forced=bool(forced and forced[i]))
    d.next_forced = next_forced
    return d


GREEDY = TargetPolicy(SamplingParams())


@pytest.mark.parametrize("tokens, argmaxes, verdict, rows_read", [
    ([2, 5, 1], [2, 5, 3, 4], Verdict(2, 0, 3), [0, 1, 2]),  # the first disagreement: the target's pick
    ([2, 5], [2, 5, 6], Verdict(2, 0, 6), [0, 1, 2]),  # all kept: the last row's pick comes for free
    ([2, 5], [7, 5, 6], Verdict(0, 0, 7), [0]),  # rows after a rejection are never read
    ([], [4], Verdict(0, 0, 4), [0]),  # no draft: a plain decoding step
])
def test_greedy(tokens, argmaxes, verdict, rows_read):
    rows, read = onehot_rows(*argmaxes)
    assert verify_greedy(draft_of(tokens), rows, GREEDY) == verdict
    assert read == rows_read


def test_greedy_under_a_grammar_forced_rows_need_no_logits():
    cons = Script([{1}, {2, 3}, {4}, {5, 6}], V)
    policy = TargetPolicy(SamplingParams(), cons)
    # Row 0's argmax (7) is irrelevant: token 1 is forced. Row 1 prefers 3, the grammar allows it: 3 != 2, rejected.
    rows, read = onehot_rows(7, 3, 0, 0)
    assert verify_greedy(draft_of([1, 2, 4], forced=[True, False, True]), rows, policy) == Verdict(1, 1, 3)
    assert read == [1] and cons.pos == 1  # kept tokens are consumed on the grammar; the target's token is not
    # Row 3 prefers 7, which the grammar refuses: the target's constrained pick is the best allowed token.
    cons = Script([{1}, {2, 3}, {4}, {5, 6}], V)
    rows, read = onehot_rows(0, 2, 0, 7)
    rows_3 = rows(3)
    rows_3[6] = 1.0
    read.clear()
    got = verify_greedy(draft_of([1, 2, 4], forced=[True, False, True]), rows, TargetPolicy(SamplingParams(), cons))
    assert got == Verdict(3, 2, 6) and read == [1, 3] and cons.pos == 3


def test_next_forced_skips_the_last_row():
    cons = Script([{2, 3}, {4}], V)
    rows, read = onehot_rows(2)
    assert verify_greedy(draft_of([2], next_forced=4), rows, TargetPolicy(SamplingParams(), cons)) == Verdict(1, 0, 4)
    assert read == [0]


def test_a_forced_token_the_grammar_refuses_is_a_bug():
    with pytest.raises(RuntimeError, match="marked token 2 as forced"):
        verify_greedy(draft_of([2], forced=[True]), onehot_rows(2)[0], TargetPolicy(SamplingParams(), Script([{3}], V)))


def test_wrap_up_rows_pick_among_closing_tokens():
    class Closing(Script):
        def closing_allowed(self):
            mask = np.zeros(self.n_vocab, dtype=bool)
            mask[5] = True
            return mask

    rows, _ = onehot_rows(4, 4)
    assert verify_greedy(draft_of([4]), rows, TargetPolicy(SamplingParams(), Closing([{4, 5}, {4, 5}], V), 1)) == \
        Verdict(1, 0, 5)  # row 0 before wrap-up keeps 4; row 1 in wrap-up picks 5 over the argmax 4


SAMPLED = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0)
P_LOGITS = np.log(np.array([0.4, 0.3, 0.2, 0.1, 1e-9, 1e-9, 1e-9, 1e-9], dtype=np.float32))


@pytest.mark.parametrize("q", [None, Dist(np.array([1, 0, 3]), np.array([0.7, 0.2, 0.1]))])
def test_sampled_first_token_has_the_targets_distribution(q):
    """Draw x from q (or always propose token 1), verify: the emitted first token must follow p exactly (here
    within sampling noise of 4000 draws)."""
    rng = np.random.default_rng(0)
    policy = TargetPolicy(SAMPLED)
    p = filtered_dist(P_LOGITS, SAMPLED)
    seen = Counter()
    n = 4000
    for _ in range(n):
        x = q.sample(rng) if q is not None else 1
        d = Draft()
        d.add(x, "model", q=q)
        v = verify_sampled(d, lambda i: P_LOGITS, policy, rng)
        seen[x if v.accepted else v.next_token] += 1
    for t in range(4):
        assert seen[t] / n == pytest.approx(p.prob(t), abs=0.03)


def test_sampled_never_keeps_what_the_target_cannot_pick():
    rng = np.random.default_rng(1)
    q = Dist(np.array([6]), np.array([1.0]))  # p(6) is 1e-9 before filtering; min_p removes it
    d = Draft()
    d.add(6, "model", q=q)
    policy = TargetPolicy(SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.05))
    for _ in range(200):
        v = verify_sampled(d, lambda i: P_LOGITS, policy, rng)
        assert v.accepted == 0 and v.next_token in (0, 1, 2, 3)


def test_verify_dispatches_on_the_sampling_mode():
    rows, _ = onehot_rows(2, 3)
    assert verify(draft_of([2]), rows, GREEDY, np.random.default_rng(0)) == Verdict(1, 0, 3)
