"""Span memory: text from earlier requests and sessions (contexts, replies, tool calls), found by an index.

The copy drafter looks in the current context first; what an earlier request saw or wrote (the server answers the
same kind of request again and again; an app session edits the files the last one did) lives here. Lookups go
through a hash index of the text's line and sentence starts, not a scan: a query's tail is anchored at its own
last such start, so a hit is a few dictionary probes whatever the memory holds. (llama-server's `ngram-mod` keeps
a similar cross-request memory; SuffixDecoding builds suffix trees for it.)
"""

from __future__ import annotations

import re

from localspec.speculative.indexes.text import CONTROL

_ANCHOR = re.compile(rb"(?:\n|[.;:!?] )[ \t]*")  # a line or sentence start (after its indentation)


class SpanMemory:
    def __init__(self, *, max_bytes: int = 4 << 20, key_bytes: int = 12, max_docs_bytes: int = 1 << 20):
        self.max_bytes = max_bytes  # the oldest half goes when it is full
        self.key_bytes = key_bytes  # an anchor's key: this many bytes from the start it marks
        self.max_doc = max_docs_bytes  # a larger document keeps its end (the most recent text)
        self.text = bytearray()
        self._index: dict[int, list[int]] = {}
        self._recent: set[int] = set()  # hashes of recently added documents: the same context is added once

    def __len__(self) -> int:
        return len(self.text)

    def add(self, doc: bytes) -> None:
        """Remember a document (matches never run across two)."""
        doc = bytes(doc[-self.max_doc:])
        if len(doc) < self.key_bytes or hash(doc) in self._recent:
            return
        self._recent.add(hash(doc))
        if len(self.text) + len(doc) + 1 > self.max_bytes:
            self._drop_oldest()
        base = len(self.text)
        self.text += doc + CONTROL
        self._add_anchor(base)
        for m in _ANCHOR.finditer(doc):
            self._add_anchor(base + m.end())

    def _add_anchor(self, pos: int) -> None:
        key = bytes(self.text[pos:pos + self.key_bytes])
        if len(key) == self.key_bytes and CONTROL not in key:
            self._index.setdefault(hash(key), []).append(pos)

    def _drop_oldest(self) -> None:
        keep = bytes(self.text[len(self.text) // 2:])
        cut = keep.find(CONTROL) + 1  # whole documents only
        self.text, self._index, self._recent = bytearray(), {}, set()
        for doc in keep[cut:].split(CONTROL):
            if doc:
                self.add(doc)

    def find(self, query: bytes, max_bytes: int) -> tuple[bytes, int]:
        """What followed the longest remembered occurrence of `query`'s tail (from one of its line or sentence
        starts), up to the end of that document or `max_bytes`; and the match's length. (b"", 0) if none."""
        text = self.text
        for a in reversed([m.end() for m in _ANCHOR.finditer(query)]):
            need = query[a:]
            if len(need) < self.key_bytes:
                continue
            for pos in reversed(self._index.get(hash(need[:self.key_bytes]), ())):
                end = pos + len(need)
                if text[pos:end] != need:
                    continue
                length = len(need)
                while length < len(query) and pos > 0 and text[pos - 1] == query[-length - 1]:
                    pos -= 1
                    length += 1
                stop = text.find(CONTROL, end, end + max_bytes)
                return bytes(text[end:stop if stop >= 0 else end + max_bytes]), length
            break  # the latest anchor has no hit: an earlier one (a longer match) would not either
        return b"", 0
