"""Recall: earlier generations found again from how a context ends (SuffixIndex), kept for the next process
(GenerationLog: the conversation store), proposed by RecallDrafter. Pure Python here; tests/speculative/sources/test_recall_engine.py runs
a repeated request on a real model."""

from __future__ import annotations

import pytest

from localspec.agent.drafting_memory import StoredGenerations
from localspec.conversations import ConversationStore
from localspec.speculative.indexes.suffixes import KEY, MAX_MATCH, SuffixIndex
from localspec.speculative.sources.recall import PROMPT_TAIL, STRONG_MATCH, GenerationMemory, RecallDrafter

# Three sequences that share [1, 2, 3, 4, 5] after different first tokens: two go on with 8, one with 6.
A = [10, 1, 2, 3, 4, 5, 6, 7]
B = [11, 1, 2, 3, 4, 5, 8, 9]
C = [12, 1, 2, 3, 4, 5, 8, 7]


def _index(*seqs):
    idx = SuffixIndex()
    for s in seqs:
        idx.add(s)
    return idx


def test_the_most_frequent_continuation_of_the_longest_matches_is_drafted():
    # [0, 1..5] matches all three over 5 tokens; 8 follows two of them (support 2/3), then 9 (B) and 7 (C) are
    # equally frequent and the most recent (C, added last) wins.
    assert _index(A, B, C).find([0, 1, 2, 3, 4, 5], 8) == ([8, 7], 5, 2 / 3)


def test_a_longer_match_beats_frequency():
    # [11, 1..5] matches B over 6 tokens, the others over 5 only: B's continuation, all of it.
    assert _index(A, B, C).find([11, 1, 2, 3, 4, 5], 8) == ([8, 9], 6, 1.0)


def test_nothing_runs_past_a_sequence_or_before_a_key():
    idx = _index(A, B)
    assert idx.find([2, 3, 4, 5, 6, 7], 8) == ([], 0, 0.0)  # A's last tokens: nothing followed them
    assert idx.find([3, 4, 5], 8) == ([], 0, 0.0)  # fewer than KEY tokens
    assert idx.find([9, 9, 9, 9], 8) == ([], 0, 0.0)  # never seen
    assert idx.find([0, 1, 2, 3, 4, 5], 1) == ([8], 5, 0.5)  # max_len; 8 (B) and 6 (A) tie: the most recent


def test_a_match_stops_growing_at_max_match():
    seq = list(range(100, 100 + MAX_MATCH + 10)) + [1, 2]
    toks, m, _ = _index(seq).find(seq[:-1], 4)
    assert (toks, m) == ([2], MAX_MATCH)


def test_a_sequence_added_twice_is_held_once_and_the_oldest_half_goes_when_full():
    idx = SuffixIndex(max_tokens=40)
    idx.add(A)
    idx.add(A)
    assert len(idx) == len(A) + 1
    for first in range(20, 24):  # 4 x 9 tokens more: over 40, the older half is dropped, whole sequences only
        idx.add([first] + B[1:])
    assert len(idx) <= 40
    assert idx.find([0, 1, 2, 3, 4, 5], 2)[0] == [8, 9]  # A is gone, the newer ones remain
    assert KEY == 4


@pytest.fixture
def log(tmp_path):
    """Where recall keeps generations for the next process: the conversation store (agent/drafting_memory.py)."""
    with ConversationStore(tmp_path / "conversations.sqlite3") as store:
        cid = store.create()
        yield StoredGenerations(store, lambda: cid)


# A vocabulary of one character per token: token t is chr(t).
def _bytes(t, special=True):
    return chr(t).encode()


def _tokenize(text):
    return [ord(c) for c in text]


def test_a_finished_generation_is_drafted_again_from_its_prompts_tail_and_logged(log):
    mem = GenerationMemory(_bytes, _tokenize, log)
    src = RecallDrafter(mem)
    prompt = _tokenize("x" * 100 + "<user>Tell me a story.<assistant>")
    reply = _tokenize("Once upon a time there was a fox.")
    assert src.candidate(prompt, 16) is None  # nothing remembered yet
    src.finish(prompt + reply, len(prompt))
    found = src.candidate(prompt, 16)
    assert found.tokens == reply[:16] and found.match >= STRONG_MATCH and src.bucket(found.match) == 0
    assert found.key == "recall"
    # Logged: the prompt's last PROMPT_TAIL tokens and the reply, as text; a new memory (the next process) has it.
    assert log.read()[0]["prompt"] == "".join(map(chr, prompt[-PROMPT_TAIL:]))
    again = RecallDrafter(GenerationMemory(_bytes, _tokenize, log))
    assert again.candidate(prompt, 40).tokens == reply
    # Midway through the repeated reply it goes on from there.
    assert again.candidate(prompt + reply[:10], 5).tokens == reply[10:15]


def test_short_matches_propose_nothing_and_split_continuations_are_weak():
    mem = GenerationMemory(_bytes, _tokenize)
    src = RecallDrafter(mem)
    for end in ("cat sat.", "dog ran.", "dog sat."):
        seq = _tokenize("The big " + end)
        src.finish(seq, 8)
    assert src.candidate(_tokenize("so big "), 8) is None  # a 5-token match: below MIN_MATCH
    found = src.candidate(_tokenize("The big "), 8)  # 8 tokens matched; 'd' followed 2 of 3: support 2/3
    assert found.tokens == _tokenize("dog sat.") and src.bucket(found.match) == 1  # under STRONG_MATCH: weak
    assert found.key == "recall:weak"  # and its continuation learned apart from a strong match's


def test_logged_tokens_of_the_same_vocabulary_are_read_without_tokenising(log):
    prompt, reply = _tokenize("<user>Hi there, how are you?<assistant>"), _tokenize("Fine, thanks for asking.")
    GenerationMemory(_bytes, _tokenize, log, vocab="v1").add(prompt + reply, len(prompt))
    row = log.read()[0]
    assert row["vocab"] == "v1" and row["tokens"] == prompt + reply
    calls = []

    def counting(text):
        calls.append(text)
        return _tokenize(text)

    same = RecallDrafter(GenerationMemory(_bytes, counting, log, vocab="v1"))
    assert same.candidate(prompt, 40).tokens == reply and not calls  # the logged tokens, as they were
    other = RecallDrafter(GenerationMemory(_bytes, counting, log, vocab="v2"))
    assert other.candidate(prompt, 40).tokens == reply and calls  # another vocabulary: its text, tokenised
