"""Argument values from the request: at the start of a JSON value, propose the next span of the user's last message
that fits there (a quoted or back-ticked phrase, a path, a number, a capitalised name).

In an agent loop most argument values are copied from the request ("show me src/utils.py", "lines 74 to 114"),
but where a value starts nothing in the call so far points at it, so n-gram lookup cannot find it. The grammar
picks which kind fits (a number where the schema wants one); spans already used in this call are skipped, so
"lines 74 to 114" fills start_line and then end_line.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.indexes.text import TextIndex, context_piece, tail_text

# Kinds of span, most specific first; each regex's group 1 is the value.
_SPANS = (
    re.compile(r"`([^`\n]{1,120})`"),
    re.compile(r"\"([^\"\n]{1,120})\""),
    re.compile(r"(?<![\w])'([^'\n]{1,120})'(?![\w])"),
    re.compile(r"(?<![\w/.~-])((?:[\w.~-]+/)+(?:[\w.-]*[\w-])?|[\w-]+\.[A-Za-z]\w{0,7})(?![\w/])"),  # paths
    re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.]*\w)"),  # numbers
    re.compile(r"(?<=[ ,(])(?<![.!?] )([A-Z][\w-]*(?: [A-Z][\w-]*)*)"),  # capitalised, not sentence-initial
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_USER_TURN = re.compile(rb"(?:\x00|>)user\b[^\n]*\n")
_TURN_END = re.compile(rb"\x00|<\|im_end\|>|<end_of_turn>|<\|eot_id\|>")


def last_request(text: bytes) -> tuple[str, str]:
    """(the user's last message, the turn being generated) in a context's text (TextIndex). Turn markers are control
    tokens (\\x00 here) or, when a template writes them as text, end in '>' (<|im_start|>user, <start_of_turn>user)."""
    starts = list(_USER_TURN.finditer(text))
    if not starts:
        return "", ""
    body = text[starts[-1].end():]
    end = _TURN_END.search(body)
    msg = body[:end.start()] if end else body
    msg = msg.rsplit(b"</tool_response>", 1)[-1]  # after a tool's output, the request is what follows it
    turn = body[end.end():] if end else b""
    return msg.decode("utf-8", "replace"), turn.decode("utf-8", "replace")


def request_spans(message: str) -> list[str]:
    """Candidate values in the order they appear in the message (more specific kinds win on overlap)."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, str]] = []
    for rx in _SPANS:
        for m in rx.finditer(message):
            a, b = m.span(1)
            if any(a < y and x < b for x, y in taken):
                continue
            taken.append((a, b))
            found.append((a, m.group(1)))
    return [s for _, s in sorted(found)]


class SpanDrafter(CandidateDrafter):
    name = "ngram"  # prompt lookup, as far as users and stats are concerned
    key = "span"  # its acceptance is tracked apart
    grammar_only = True
    whole_value = True  # a candidate is a whole value: the hybrid guesses how it ends next

    def __init__(self, token_bytes: Callable[..., bytes], tokenize: Callable[[str], list[int]], *,
                 max_len: int = 24):
        self._tokenize = tokenize
        self.max_len = max_len

        self._piece = context_piece(token_bytes)
        self.index = TextIndex(self._piece)

    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        tail = tail_text(self._piece, context)  # the whole context's text is only needed where a value starts
        if tail.endswith(b'": "'):
            lead_s, lead_n = "", None
        elif tail.endswith(b'": '):
            lead_s, lead_n = '"', ""
        elif tail.endswith(b'":'):
            lead_s, lead_n = ' "', " "
        else:
            return None
        self.index.sync(context)
        message, turn = last_request(bytes(self.index.text))
        if not message:
            return None
        spans = [s for s in request_spans(message) if s not in turn]  # skip what this call used already
        numbers = [s for s in spans if _NUMBER.fullmatch(s)]
        words = [s for s in spans if not _NUMBER.fullmatch(s)]
        # Numbers where the grammar wants a number; in a string a number is the last resort.
        for lead, span in [(lead_n, s) for s in numbers] + [(lead_s, s) for s in words + numbers]:
            if lead is None:
                continue
            # Lead and value apart: models write the quote as its own token, not merged into the value. No
            # closing quote: it comes merged with what follows ('",' '"}'), which the hybrid's closers guess.
            toks = ((self._tokenize(lead) if lead else []) + self._tokenize(span))[: min(max_len, self.max_len)]
            if constraint is None or constraint.valid_prefix(toks) == len(toks):
                return self.found(toks, 1)
        return None

    def reset(self) -> None:
        self.index = TextIndex(self._piece)
