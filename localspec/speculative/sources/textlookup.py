"""Prompt lookup on text instead of tokens.

A value copied from the request is usually tokenised differently inside a JSON string than in prose: `"src/` after
a quote is not ` src/` after a space, so token n-grams miss it. Here the tail of the context is matched as bytes
(longest, then most recent) and what followed is re-tokenised, up to where a copied value plausibly ends.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.indexes.text import CONTROL, TextIndex, context_piece

# Where a copied value plausibly ends: a quote, a line end, a control token, or sentence punctuation before a space.
_VALUE_END = re.compile(rb'["\n\x00`]|[.,;:!?)](?:[\s\x00]|$)')
_WORD = re.compile(rb"\s*\S+")
_ALNUM = re.compile(rb"[A-Za-z0-9\x80-\xff]")


class TextLookupDrafter(CandidateDrafter):
    name = "ngram"  # reported as prompt lookup, like the token-level one
    key = "text"  # but its acceptance is tracked separately
    grammar_only = True  # one word at a time, for values in calls: prose has token n-grams and long copies

    def __init__(self, token_bytes: Callable[..., bytes], tokenize: Callable[[str], list[int]], *,
                 max_len: int = 16, min_match: int = 3, max_match: int = 48, max_bytes: int = 96):
        self._tokenize = tokenize  # text -> tokens, no BOS, special tokens as plain text
        self.max_len = max_len
        self.min_match = min_match
        self.max_match = max_match
        self.max_bytes = max_bytes

        self.index = TextIndex(context_piece(token_bytes))

    def match(self) -> tuple[int, int]:
        """(start, length) of the longest earlier occurrence of the text's tail; the most recent among equals."""
        text = self.index.text
        n = len(text)
        length = self.min_match
        if n <= length:
            return -1, 0
        pos = text.rfind(text[n - length:], 0, n - 1)  # must end before the tail does: something follows it
        if pos < 0 or CONTROL in text[n - length:]:
            return -1, 0
        while length < self.max_match:
            # Grow this occurrence backwards for free, then look for a longer one elsewhere.
            while length < self.max_match and pos > 0 and length < n - 1 and text[pos - 1] == text[n - length - 1] \
                    and text[pos - 1] != CONTROL[0]:
                pos -= 1
                length += 1
            if length >= self.max_match or length >= n - 1:
                break
            longer = text.rfind(text[n - length - 1:], 0, n - 1)
            if longer < 0 or text[n - length - 1] == CONTROL[0]:
                break
            pos, length = longer, length + 1
        return pos, length

    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        self.index.sync(context)
        pos, length = self.match()
        text = self.index.text
        if pos < 0 or not _ALNUM.search(text, pos, pos + length):
            return None  # punctuation alone ('": ' after any key) says nothing about what follows
        start = pos + length
        follow = bytes(text[start:start + self.max_bytes])
        end = _VALUE_END.search(follow)
        follow = follow[:end.start()] if end else follow
        # One word at a time: whether a copied value goes on past a word end (a place name) or stops there ("to"
        # in "from Sydney to Melbourne") is its own question, with its own acceptance bucket (0).
        at_word_end = follow[:1].isspace()
        word = _WORD.match(follow)
        value = follow[:word.end()].decode("utf-8", "ignore") if word else ""
        if not value:
            return None
        toks = self._tokenize(value)[: min(max_len, self.max_len)]
        return self.found(toks, 0 if at_word_end else max(1, length // 3))  # else a match length in tokens, roughly

    def reset(self) -> None:
        self.index = TextIndex(self.index._piece)
