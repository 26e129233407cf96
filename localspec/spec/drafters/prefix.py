"""Keeping a drafter's index of the context in step with it, without comparing the whole context every step."""

from __future__ import annotations

from typing import Sequence

_HEAD = 16  # another conversation altogether shows in its first tokens (system prompt, tools)
_TAIL = 128  # between two calls the context only grows, or loses its last draft (at most 64 tokens)


def common_prefix(own: Sequence[int], tokens: Sequence[int]) -> int:
    """How many leading tokens an index (`own`) shares with the context. Only the head and the last _TAIL tokens
    of the overlap are compared: a wrong answer could only cost draft quality, never output (drafts are
    verified), while a full comparison costs O(context) on every candidate."""
    n = min(len(own), len(tokens))
    head = min(_HEAD, n)
    for i in range(head):
        if own[i] != tokens[i]:
            return i
    for i in range(max(n - _TAIL, head), n):
        if own[i] != tokens[i]:
            return i
    return n
