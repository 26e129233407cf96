"""The verifier on literal logits rows: which drafted tokens are kept and which token the target adds, greedy and
sampled, with forced rows and a grammar, reading whole rows or each row's few best tokens as a device picks them.
No model: rows are arrays (tests/speculative/test_engine.py checks the same code end to end on llama.cpp)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from localspec.speculative.draft import Draft
from localspec.speculative.sampling import Dist, SamplingParams, filtered_dist, top_pick
from localspec.speculative.verify import TargetPolicy, Verdict, verify, verify_greedy, verify_sampled
from tests.speculative.fakes import Script

V = 8  # vocabulary size


class LiteralRows:
    """A pass's rows as arrays, by row index: whole rows (Context.logits, each read recorded in `read`) and, with
    `top` > 0, each row's `top` best tokens as a device picks them (Context.top, recorded in `tops`). Where tokens
    tie at the cut, the device keeps the highest ids (llama.cpp's top-k keeps any of them), so a pick that trusted a
    tie with a left-out token would differ from the whole row's argmax."""

    def __init__(self, rows, top: int = 0):
        self.rows, self.k = rows, top
        self.read: list[int] = []
        self.tops: list[int] = []

    def logits(self, i: int) -> np.ndarray:
        self.read.append(i)
        return self.rows[i]

    def top(self, i: int):
        if not self.k:
            return None
        self.tops.append(i)
        row = self.rows[i]
        kept = np.lexsort((-np.arange(V), -row))[:self.k]  # highest logits; among equal ones the highest ids
        pairs = sorted(zip(row[kept].tolist(), kept.tolist()), key=lambda p: (-p[0], p[1]))
        return [t for _, t in pairs], [x for x, _ in pairs]


def onehot_rows(*argmaxes: int, top: int = 0):
    """Rows whose argmax is the given token; (the rows, the list of whole rows read)."""
    rows = LiteralRows([np.where(np.arange(V) == t, 5.0, 0.0).astype(np.float32) for t in argmaxes], top)
    return rows, rows.read


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
    # The same from each row's 2 best tokens alone: no whole row is read.
    rows = LiteralRows(rows.rows, top=2)
    assert verify_greedy(draft_of(tokens), rows, GREEDY) == verdict
    assert rows.tops == rows_read and rows.read == []


@pytest.mark.parametrize("ids, logits, allowed, pick", [
    ([4, 1, 2], [3.0, 2.0, 1.0], None, 4),  # the best
    ([1, 4, 2], [3.0, 3.0, 1.0], None, 1),  # equal logits: the lowest id, as numpy's argmax
    ([4, 1, 2], [3.0, 2.0, 1.0], {1, 2}, 1),  # the best the grammar allows
    ([4, 1, 2], [3.0, 2.0, 1.0], {2}, None),  # allowed, but tied with the lowest candidate: a left-out token may tie
    ([4, 1, 2], [3.0, 2.0, 1.0], {7}, None),  # nothing allowed: the whole row decides
    ([1, 4], [3.0, 3.0], None, None),  # all candidates equal: a left-out token may share their logit
    ([], [], None, None),
])
def test_top_pick(ids, logits, allowed, pick):
    assert top_pick(ids, logits, None if allowed is None else allowed.__contains__) == pick


@pytest.mark.parametrize("top", [0, 2, 3])
@pytest.mark.parametrize("row, allowed, pick, whole", [
    # (whole: whether the whole row is read with 2 and with 3 best tokens kept)
    ([0, 0, 0, 0, 0, 0, 0, 5], {7}, 7, (False, False)),
    ([0, 0, 0, 0, 0, 0, 2, 5], {6, 0}, 6, (True, False)),  # the second best: at the cut with 2 kept, above it with 3
    ([0, 0, 0, 0, 0, 0, 0, 5], {0, 3}, 0, (True, True)),  # kept [7, 6] (ties kept high): 0 is only in the row
    ([0, 0, 0, 0, 0, 1, 1, 5], {5, 6}, 5, (True, True)),  # tied second bests: 5 by id, though 2 kept 6 alone
    ([0, 0, 0, 0, 1, 2, 3, 5], {6}, 6, (True, False)),  # with 2 kept, 6 sits at the cut: a left-out token may tie
])
def test_greedy_from_the_best_tokens_under_a_grammar(top, row, allowed, pick, whole):
    """The constrained pick from a row's few best tokens is the whole row's masked argmax, whatever tied tokens the
    device kept; the whole row is read exactly where they cannot tell."""
    rows = LiteralRows([np.array(row, dtype=np.float32)], top)
    policy = TargetPolicy(SamplingParams(), Script([allowed], V))
    assert verify_greedy(draft_of([]), rows, policy) == Verdict(0, 0, pick)
    assert rows.read == ([0] if top == 0 or whole[top - 2] else [])


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
    rows.rows[3][6] = 1.0
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

    for top in (0, 2):
        rows, _ = onehot_rows(4, 4, top=top)
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
        v = verify_sampled(d, LiteralRows([P_LOGITS, P_LOGITS], top=2), policy, rng)  # whole rows, even so
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
        v = verify_sampled(d, LiteralRows([P_LOGITS, P_LOGITS]), policy, rng)
        assert v.accepted == 0 and v.next_token in (0, 1, 2, 3)


def test_verify_dispatches_on_the_sampling_mode():
    rows, _ = onehot_rows(2, 3)
    assert verify(draft_of([2]), rows, GREEDY, np.random.default_rng(0)) == Verdict(1, 0, 3)
