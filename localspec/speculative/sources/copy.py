"""Copy-aware lookup: long spans copied from the context, across JSON string escaping.

An agent edits files with `edit_file` (`old` copied exactly from the file, `new` mostly a copy with a change) and
`write_file` (the whole file again). The file's text is in the context raw, as a tool result; in the call it sits
inside a JSON string, where a newline is `\\n`, a quote `\\"`, a backslash `\\\\`. Token n-grams never match across
that, and the text lookup stops at the first newline or quote. Here the string being written is unescaped, its
tail is looked up in the context's text (earlier calls' strings read unescaped there), and what followed
is proposed escaped again, many lines in one draft: up to where the copied region ends (a turn marker, the end of
the earlier string) or the byte budget. Outside a grammar (a reply that quotes a file in a Markdown fence) the same
lookup runs on the raw text, for long matches only.

SuffixDecoding (Oliaro et al., 2025) works on the same ground: repeated, long, predictable spans in agent loops.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.indexes.memory import SpanMemory
from localspec.speculative.indexes.prefix import common_prefix
from localspec.speculative.indexes.resume import resume_at
from localspec.speculative.indexes.text import CONTROL, TextIndex, context_piece

# A JSON string literal with at least one escape in it: the text of an earlier call's long value. Literals without
# an escape read the same raw and escaped, so the raw text already holds them.
_ESCAPED_LITERAL = re.compile(rb'"((?:[^"\\\x00\n]|\\[^\x00\n])*\\(?:[^"\\\x00\n]|\\[^\x00\n])*)"')
# The same, as a value in a call's arguments ('"old": "...'): in the text the copy looks in, each is read unescaped
# (its literal fenced by CONTROL, so no match runs across its ends). Literals elsewhere (code in a tool result)
# are the file's own text and stay as they are.
_CALL_VALUE = re.compile(rb'":\s*"((?:[^"\\\x00\n]|\\[^\x00\n])*\\(?:[^"\\\x00\n]|\\[^\x00\n])*)"')
_VALUE_KEY = re.compile(rb'"([A-Za-z_][\w-]{0,40})"\s*:\s*"$')
_NEW_REQUEST = 64  # tokens dropped from the context at once: more than any rejected draft (max_draft)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


def unescape_partial(escaped: str) -> tuple[str, str]:
    """(the raw text of a JSON string's body written so far, an escape left incomplete at its end)."""
    out: list[str] = []
    i, n = 0, len(escaped)
    while i < n:
        c = escaped[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            return "".join(out), escaped[i:]
        e = escaped[i + 1]
        if e == "u":
            digits = escaped[i + 2:i + 6]
            if len(digits) < 4:
                return "".join(out), escaped[i:]
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                return "".join(out), ""
            i += 6
            continue
        out.append(_ESCAPES.get(e, e))
        i += 2
    return "".join(out), ""


def escape(text: str) -> str:
    """How a JSON encoder writes `text` inside a string (the form models learn: non-ASCII kept, '/' unescaped)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def call_strings(text: bytes, end: int | None = None) -> list[bytes]:
    """The unescaped text of every JSON string with an escape in it (earlier calls' long values) in text[:end]."""
    found = _ESCAPED_LITERAL.finditer(text, 0, len(text) if end is None else end)
    return [unescape_partial(m.group(1).decode("utf-8", "replace"))[0].encode() for m in found]


def remember_call(memory: SpanMemory, text: str) -> None:
    """A finished call's long string values, unescaped, into the span memory (what a later copy may find)."""
    for s in call_strings(text.encode()):
        memory.add(s)


def raw_view(text: bytes) -> bytes:
    """`text` with every call argument's escaped string read as the raw text it stands for, fenced by CONTROL: the
    copy drafter matches raw text (the file in a tool result, the `old` just written) and escapes what it proposes,
    so an earlier call's escaped text left as it is would match and come out escaped twice."""
    out: list[bytes] = []
    last = 0
    for m in _CALL_VALUE.finditer(text):
        out += (text[last:m.start(1)], CONTROL, unescape_partial(m.group(1).decode("utf-8", "replace"))[0].encode(),
                CONTROL)
        last = m.end(1)
    if not out:
        return bytes(text)
    out.append(text[last:])
    return b"".join(out)


def line_starts(escaped: bytes) -> list[int]:
    """Offsets in a JSON string body just after each escaped newline (`\\n`; an escaped backslash before an `n`
    is not one)."""
    out: list[int] = []
    i = 0
    while True:
        i = escaped.find(b"\\", i)
        if i < 0 or i + 1 >= len(escaped):
            return out
        if escaped[i + 1] == 0x6E:  # n
            out.append(i + 2)
        i += 2


def _value_kind(text: bytes | bytearray, start: int) -> str:
    """The rate key suffix (Candidate.key) of a copy into the string that opened at `start`: its key where it is one
    an edit uses (an `old` ends early, `content` runs to the end of the file), else one suffix for every other
    value."""
    key = _VALUE_KEY.search(text, max(start - 48, 0), start)
    name = key.group(1).decode() if key else ""
    return ":" + name if name in ("old", "new", "content") else ":value"


def string_start(text: bytes | bytearray) -> int:
    """Offset just after the quote that opened the JSON string `text` ends inside (-1 if none on record): the last
    quote not escaped by a backslash before it."""
    i = len(text)
    while True:
        i = text.rfind(b'"', 0, i)
        if i < 0:
            return -1
        k = i
        while k > 0 and text[k - 1] == 0x5C:  # backslash
            k -= 1
        if (i - k) % 2 == 0:
            return i + 1


class CopyDrafter(CandidateDrafter):
    name = "ngram"  # reported with prompt lookup (one switch), tracked under its own key
    key = "copy"

    def __init__(self, token_bytes: Callable[..., bytes], tokenize: Callable[[str], list[int]], *,
                 max_len: int = 64, max_bytes: int = 400, min_match: int = 12, min_prose_match: int = 24,
                 max_query: int = 160, memory: SpanMemory | None = None):
        self._tokenize = tokenize  # text -> tokens, no BOS, special tokens as plain text
        self.max_len = max_len
        self.max_bytes = max_bytes
        self.min_match = min_match  # bytes of a string's tail that must match (or the whole string so far)
        self.min_prose_match = min_prose_match  # outside a string a short match is prompt lookup's business
        self.max_query = max_query
        self._piece = context_piece(token_bytes)
        self.index = TextIndex(self._piece)
        self._view = b""  # raw_view of the context up to its last turn marker ...
        self._view_upto = -1  # ... which is here
        # Text of earlier requests and sessions; a context dropped for a new request goes there.
        self.memory = memory

    def _sync(self, context: Sequence[int]) -> None:
        idx = self.index
        n = common_prefix(idx.tokens, context)
        if self.memory is not None and len(idx.tokens) - n > _NEW_REQUEST:
            # Not a rejected draft (those are short): a new request or conversation. What it drops is remembered.
            self._remember(bytes(idx.text[idx.ends[n - 1] if n else 0:]))
        idx.sync(context)

    def _remember(self, text: bytes) -> None:
        """A dropped context, raw (tool results, prose) and with its calls' strings unescaped."""
        assert self.memory is not None  # both callers check
        self.memory.add(text)
        for s in call_strings(text):
            self.memory.add(s)

    def add_call_tokens(self, tokens: Sequence[int], text: str, tool: str | None = None) -> None:
        if self.memory is not None:
            remember_call(self.memory, text)

    # -- the corpus --------------------------------------------------------------------------------------------
    def _corpus(self, end: int) -> bytes:
        """The context's text before `end`, its calls' strings unescaped (raw_view). The finished turns' part is
        kept until the next turn marker; only the current turn is read again."""
        text = self.index.text
        upto = max(text.rfind(CONTROL, 0, end), 0)
        if upto != self._view_upto:
            self._view = raw_view(bytes(text[:upto]))
            self._view_upto = upto
        return self._view + raw_view(bytes(text[upto:end]))

    @staticmethod
    def _longest(corpus: bytes, query: bytes, min_len: int) -> tuple[int, int]:
        """(end offset in corpus, length) of the longest suffix of `query` found in `corpus`, at least `min_len`
        bytes long; the most recent occurrence among equals. (-1, 0) if none."""
        if len(query) < min_len:
            return -1, 0
        pos = corpus.rfind(query[-min_len:])
        if pos < 0:
            return -1, 0
        best_end, length = pos + min_len, min_len
        while length < len(query):
            # Grow backwards at this occurrence for free, then look for one with a longer match elsewhere.
            while length < len(query) and pos > 0 and corpus[pos - 1] == query[-length - 1]:
                pos -= 1
                length += 1
            if length >= len(query):
                break
            longer = corpus.rfind(query[-length - 1:])
            if longer < 0:
                break
            pos, length = longer, length + 1
            best_end = pos + length
        return best_end, length

    def _follow(self, corpus: bytes, end: int) -> str:
        """What followed a match, up to the end of its region (a turn marker) or the byte budget."""
        stop = corpus.find(CONTROL, end, end + self.max_bytes)
        return corpus[end:stop if stop >= 0 else end + self.max_bytes].decode("utf-8", "ignore")

    # -- proposals ---------------------------------------------------------------------------------------------
    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        self._sync(context)
        if constraint is not None:
            return self._in_string(max_len) if constraint.in_string() else None
        return self._in_prose(max_len)

    def _in_string(self, max_len: int) -> Candidate | None:
        text = self.index.text  # read in place: a copy of the whole context per step would be wasted
        start = string_start(text)
        if start < 0 or CONTROL in text[start:]:
            return None
        written = text[start:].decode("utf-8", "replace")
        raw, pending = unescape_partial(written)
        if not raw:
            return self._repeat_value(text, start, max_len)
        data = raw.encode()
        query = data[-self.max_query:]
        corpus = self._corpus(max(start - 1, 0))
        kind = _value_kind(text, start)
        end, length = self._longest(corpus, query, min(self.min_match, len(query)))
        if end < 0 or (length < self.min_match and length < len(data)):
            # New text so far (an edit's change): at a line start the old text may resume after it.
            resumed = resume_at(data, corpus)
            if resumed is not None:
                end, length, kind = resumed[0], 0, ":resume"  # a guess at where: its own rates, weak at first
        if end < 0 or (length < self.min_match and length < len(data) and kind != ":resume"):
            follow, length = self._remembered(query)
            if not follow:
                return None
        else:
            follow = self._follow(corpus, end)
        follow = escape(follow)
        if pending:
            if not follow.startswith(pending):
                return None
            follow = follow[len(pending):]
        if length >= len(data) >= self.min_match:
            length = max(length, 2 * self.min_match)  # the whole string so far is a copy (a file's line): strong
        return self._escaped(follow, max_len, length, kind)

    def _repeat_value(self, text: bytes | bytearray, start: int, max_len: int) -> Candidate | None:
        """At the start of `new`, the `old` value of the same call: a replacement is mostly a copy of the text it
        replaces, up to the change."""
        key = _VALUE_KEY.search(text, max(start - 48, 0), start)
        if key is None or key.group(1) != b"new":
            return None
        head = text.rfind(b'"old"', 0, start)
        if head < 0 or CONTROL in text[head:start]:
            return None
        open_quote = text.find(b'"', text.find(b":", head + 5) + 1)
        body = text[open_quote + 1:key.start()]
        close = string_start(body)  # the quote that closed `old`: the last unescaped one before "new"
        if close <= 1:
            return None
        old = body[:close - 1].decode("utf-8", "ignore")
        return self._escaped(old[: self.max_bytes * 2], max_len, len(old), ":new")

    def _in_prose(self, max_len: int) -> Candidate | None:
        text = self.index.text  # read in place: a copy of the whole context per step would be wasted
        turn = text.rfind(CONTROL) + 1
        query = bytes(text[max(turn, len(text) - self.max_query):])
        corpus = self._corpus(len(text) - len(query))
        end, length = self._longest(corpus, query, self.min_prose_match)
        if end < 0:
            follow, length = self._remembered(query)
            return self.found(self._tokens(follow, max_len), length) if length >= self.min_prose_match else None
        return self.found(self._tokens(self._follow(corpus, end), max_len), length)

    def _remembered(self, query: bytes) -> tuple[str, int]:
        if self.memory is None:
            return "", 0
        follow, length = self.memory.find(query, self.max_bytes)
        return follow.decode("utf-8", "ignore"), length

    def _tokens(self, follow: str, max_len: int) -> list[int]:
        return self._tokenize(follow)[: min(max_len, self.max_len)] if follow else []

    def _escaped(self, follow: str, max_len: int, length: int, kind: str) -> Candidate | None:
        """The candidate of escaped text copied into the value `kind` (":old", ...), with breaks where a line of it
        starts (where a copy into `old` usually stops): the first token that ends past each escaped newline, the one
        the model picks instead of going on."""
        toks = self._tokens(follow, max_len)
        starts = line_starts(follow.encode())
        breaks: list[int] = []
        if toks and starts:
            ends, pos = [], 0
            for t in toks:
                pos += len(self._piece(t))
                ends.append(pos)
            j = 0
            for b in starts:
                while j < len(ends) and ends[j] <= b:
                    j += 1
                if 0 < j < len(ends) and (not breaks or breaks[-1] != j):
                    breaks.append(j)
        return self.found(toks, length, breaks=tuple(breaks), suffix=kind)

    def bucket(self, m: int) -> int:
        return 0 if m >= 2 * self.min_match else 1

    def reset(self) -> None:
        if self.memory is not None:
            self._remember(bytes(self.index.text))  # a new conversation: the last one is remembered
        self.index = TextIndex(self.index._piece)
        self._view, self._view_upto = b"", -1
