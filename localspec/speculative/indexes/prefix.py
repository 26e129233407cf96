"""Keeping a drafter's index of the context in step with it, without comparing the whole context every step."""

from __future__ import annotations

from typing import Sequence

_HEAD = 16  # another conversation altogether mostly shows in its first tokens (but not always: a shared system prompt)
_TAIL = 128  # between two calls the context only grows, or loses its last draft (at most 64 tokens)
_SURE = 8  # equal tokens at the start of the tail window: the difference is a lost draft, not a new conversation


def common_prefix(own: Sequence[int], tokens: Sequence[int]) -> int:
    """How many leading tokens an index (`own`) shares with the context. Usually only the head and the last _TAIL
    tokens of the overlap are compared: a full comparison costs O(context) on every candidate. Where the tail
    differs from its start (another case after the same system prompt), everything is compared. A wrong answer
    could only cost draft quality, never output (drafts are verified)."""
    n = min(len(own), len(tokens))
    head = min(_HEAD, n)
    for i in range(head):
        if own[i] != tokens[i]:
            return i
    lo = max(n - _TAIL, head)
    for i in range(lo, n):
        if own[i] != tokens[i]:
            if i - lo < _SURE and lo > head:
                break
            return i
    else:
        return n
    return next((i for i in range(head, n) if own[i] != tokens[i]), n)


def shared_len(a: Sequence, b: Sequence) -> int:
    """How many leading items two sequences (token lists, bytes) have in common, by halving: each comparison is a
    slice compared in C, so a long common run costs a few comparisons, not one Python step per item."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo
