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

from localspec.speculative.indexes.prefix import shared_len

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

    def _match(self, end: int, context: Sequence[int]) -> int:
        """How many tokens up to `end` agree with the context's last ones (at least KEY, at most MAX_MATCH): eight
        at a time while whole slices agree (a list comparison runs in C), then one by one."""
        toks, n = self.tokens, len(context)
        lim = min(MAX_MATCH, n, end + 1)
        m = KEY
        while m + 8 <= lim and toks[end - m - 7:end - m + 1] == context[n - m - 8:n - m]:
            m += 8
        while m < lim and toks[end - m] == context[n - m - 1]:
            m += 1
        return m

    def find(self, context: Sequence[int], max_len: int) -> tuple[list[int], int, float]:
        """(the continuation, the length of the match that found it, the share of the longest matches whose next
        token is the continuation's first); ([], 0, 0.0) when the context's last KEY tokens were never seen."""
        if len(context) < KEY or max_len <= 0:
            return [], 0, 0.0
        ends = self._ends.get(tuple(context[-KEY:]))
        if not ends:
            return [], 0, 0.0
        toks = self.tokens
        context = list(context[-MAX_MATCH - 1:])
        best, at = 0, []
        for e in reversed(ends[-SCAN:]):
            if toks[e + 1] == SEP:
                continue
            m = self._match(e, context)
            if m > best:
                best, at = m, [e]
            elif m == best:
                at.append(e)
        if not at:
            return [], 0, 0.0
        conts = []  # what followed the longest matches, most recent first
        for e in at[:MAX_LIVE]:
            c = toks[e + 1:e + 1 + max_len]
            conts.append(c[:c.index(SEP)] if SEP in c else c)
        out: list[int] = []
        support = 1.0
        live = list(range(len(conts)))
        d = 0
        while d < max_len:
            if len(live) == 1:  # nothing left to rank: the rest of that continuation
                out += conts[live[0]][d:]
                break
            first = conts[live[0]]
            run = min(shared_len(first[d:], conts[i][d:]) for i in live[1:])  # where they all agree, at C speed
            out += first[d:d + run]
            d += run
            if d >= max_len:
                break
            nexts = [conts[i][d] if d < len(conts[i]) else SEP for i in live]
            counts = Counter(nexts)
            top = max(counts.values())
            tok = next(t for t in nexts if counts[t] == top)  # the most frequent; the most recent among equals
            if d == 0:
                support = top / len(live)
            if tok == SEP:
                break
            out.append(tok)
            live = [i for i, t in zip(live, nexts) if t == tok]
            d += 1
        return out, best, support
