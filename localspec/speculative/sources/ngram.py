"""Prompt lookup: find the longest recent match of the context's tail earlier in the context (user text, tool
results, earlier calls) and propose what followed it."""

from __future__ import annotations

from typing import Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.indexes.prefix import common_prefix


class NgramIndex:
    """Positions of every n-gram (n = key_n) in a token sequence, updated incrementally as it grows or loses its
    last tokens (a rejected draft)."""

    def __init__(self, key_n: int = 1):
        self.key_n = key_n
        self.tokens: list[int] = []
        self.pos: dict[tuple, list[int]] = {}

    def sync(self, tokens: Sequence[int]) -> None:
        own = self.tokens
        n = common_prefix(own, tokens)
        k = self.key_n
        for i in range(len(own) - 1, max(n, k - 1) - 1, -1):  # drop what differs (rejected drafts), newest first
            key = tuple(own[i - k + 1:i + 1])
            ends = self.pos[key]
            ends.pop()
            if not ends:
                del self.pos[key]
        del own[n:]
        for i in range(n, len(tokens)):
            own.append(tokens[i])
            if i >= k - 1:
                self.pos.setdefault(tuple(own[i - k + 1:i + 1]), []).append(i)

    def add(self, tokens: Sequence[int]) -> None:
        self.sync(self.tokens + list(tokens))

    def best_continuation(self, tail: Sequence[int], max_len: int, *, exclude_from: int | None = None,
                          max_scan: int = 64, max_match: int = 16) -> tuple[list[int], int]:
        """Continuation after the longest match of `tail`'s suffix (ties: most recent); returns (tokens, match len)."""
        k = self.key_n
        if len(tail) < k or max_len <= 0:
            return [], 0
        cands = self.pos.get(tuple(tail[-k:]))
        if not cands:
            return [], 0
        toks = self.tokens
        limit = len(toks) if exclude_from is None else exclude_from
        best_end, best_len = -1, 0
        for end in reversed(cands[-max_scan:]):
            if end + 1 >= limit:
                continue  # the match must be followed by something we can propose
            m = k
            while m < max_match and m < len(tail) and end - m >= 0 and toks[end - m] == tail[-m - 1]:
                m += 1
            if m > best_len:
                best_end, best_len = end, m
        if best_end < 0:
            return [], 0
        out = toks[best_end + 1:min(best_end + 1 + max_len, limit)]
        if exclude_from is not None and len(tail) == limit and best_end == limit - 2 and best_len > 1:
            # A run of one token ('0000'): the copy runs on as long as the run might (lists looping on a few
            # items are left to the plain copy: they break off too soon for a long guess to pay).
            out = out * max_len
        return out, best_len


WEAK_MATCH = 4  # tokens: shorter matches (a key's '": ' and little more) are guesses of their own kind


def match_bucket(m: int) -> int:
    """CandidateDrafter.bucket for drafters that match tokens: weak below WEAK_MATCH tokens."""
    return 0 if m >= WEAK_MATCH else 1


class NgramDrafter(CandidateDrafter):
    name = "ngram"
    bucket = staticmethod(match_bucket)

    def __init__(self, max_len: int = 16, min_match: int = 1):
        self.max_len = max_len
        self.min_match = min_match
        self.index = NgramIndex(1)

    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        self.index.sync(context)
        return self.found(*self.index.best_continuation(context, min(max_len, self.max_len),
                                                        exclude_from=len(context)))

    def reset(self) -> None:
        self.index = NgramIndex(1)
