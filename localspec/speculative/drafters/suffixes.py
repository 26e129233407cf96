"""Token sequences seen before, found by how they end, continued the way they most often went on.

SuffixDecoding (Oliaro et al., 2025) keeps a suffix tree over earlier outputs and drafts the continuation that
followed the longest matching suffix most often. Here the same lookup runs on a hash of each position's last KEY
tokens: the positions ending with the context's last KEY tokens are extended backwards to the longest match (up to
MAX_MATCH tokens), and from those that match longest the draft follows, token by token, the continuation most of
them share (the most recent among equals), narrowing to the positions that agree. A lookup is one dictionary probe
and a bounded scan, so it costs microseconds whatever the index holds.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

SEP = -1  # never a real token id: no match or continuation runs across two sequences
KEY = 4  # tokens hashed per position
MAX_MATCH = 64  # a match this long is as sure as any: stop extending
SCAN = 32  # most recent positions examined per lookup
MAX_LIVE = 8  # positions a continuation is followed through (the most recent of the longest matches)


class SuffixIndex:
    def __init__(self, max_tokens: int = 1 << 19):
        self.max_tokens = max_tokens  # the oldest half goes when it is full
        self.tokens: list[int] = []
        self._ends: dict[tuple[int, ...], list[int]] = {}  # last KEY tokens -> positions of the last of them
        self._seen: set[int] = set()  # hashes of the sequences held: one added twice is held once

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, seq: Sequence[int]) -> None:
        seq = list(seq)
        h = hash(tuple(seq))
        if len(seq) <= KEY or h in self._seen:
            return
        if len(self.tokens) + len(seq) + 1 > self.max_tokens:
            self._drop_oldest()
        self._seen.add(h)
        start = len(self.tokens)
        self.tokens += seq
        self.tokens.append(SEP)
        toks, ends = self.tokens, self._ends
        for i in range(start + KEY - 1, len(toks) - 1):
            ends.setdefault(tuple(toks[i - KEY + 1:i + 1]), []).append(i)

    def _drop_oldest(self) -> None:
        half = len(self.tokens) // 2
        keep = self.tokens[half:]
        # Whole sequences only: from the first that starts at or after the middle.
        cut = 0 if self.tokens[half - 1] == SEP else (keep.index(SEP) + 1 if SEP in keep else len(keep))
        self.tokens, self._ends, self._seen = [], {}, set()
        seq: list[int] = []
        for t in keep[cut:]:
            if t == SEP:
                self.add(seq)
                seq = []
            else:
                seq.append(t)

    def find(self, context: Sequence[int], max_len: int) -> tuple[list[int], int, float]:
        """(the continuation, the length of the match that found it, the share of the longest matches whose next
        token is the continuation's first); ([], 0, 0.0) when the context's last KEY tokens were never seen."""
        if len(context) < KEY or max_len <= 0:
            return [], 0, 0.0
        ends = self._ends.get(tuple(context[-KEY:]))
        if not ends:
            return [], 0, 0.0
        toks = self.tokens
        n_ctx = len(context)
        best, at = 0, []
        for e in reversed(ends[-SCAN:]):
            if toks[e + 1] == SEP:
                continue
            m = KEY
            while m < MAX_MATCH and m < n_ctx and e - m >= 0 and toks[e - m] == context[-m - 1]:
                m += 1
            if m > best:
                best, at = m, [e]
            elif m == best:
                at.append(e)
        if not at:
            return [], 0, 0.0
        live = at[:MAX_LIVE]  # most recent first
        out: list[int] = []
        support = 0.0
        while len(out) < max_len:
            d = len(out) + 1
            if len(live) == 1 and out:  # nothing left to rank: the rest of that sequence
                rest = toks[live[0] + d:live[0] + d + max_len - len(out)]
                out += rest[:rest.index(SEP)] if SEP in rest else rest
                break
            counts = Counter(toks[e + d] for e in live)
            top = max(counts.values())
            tok = next(toks[e + d] for e in live if counts[toks[e + d]] == top)  # the most recent among equals
            if not out:
                support = top / len(live)
            if tok == SEP:
                break
            out.append(tok)
            live = [e for e in live if toks[e + d] == tok]
        return out, best, support
