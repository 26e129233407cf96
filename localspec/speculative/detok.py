"""Incremental detokenisation that never splits a multi-byte character, and stop-string detection."""

from __future__ import annotations

import codecs
from typing import Callable, Sequence


class TextStream:
    """Turns tokens into text as they arrive; holds back bytes of an unfinished UTF-8 character and any tail that
    could still become a stop string."""

    def __init__(self, token_bytes: Callable[[int], bytes], stop: Sequence[str] = ()):
        self._bytes = token_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.stop = [s for s in stop if s]
        self._hold = max((len(s) for s in self.stop), default=1) - 1
        self._pending = ""  # decoded but not yet released
        self.text = ""  # everything released so far
        self.stopped = False

    def feed(self, token: int) -> str:
        """Add one token; returns the newly released text (may be empty)."""
        if self.stopped:
            return ""
        self._pending += self._decoder.decode(self._bytes(token))
        return self._release(final=False)

    def finish(self) -> str:
        if self.stopped:
            return ""
        self._pending += self._decoder.decode(b"", final=True)
        return self._release(final=True)

    def _release(self, final: bool) -> str:
        if self.stop:
            window = self.text[-self._hold:] + self._pending if self._hold else self._pending
            offset = len(window) - len(self._pending)
            cut = min((i for i in (window.find(s) for s in self.stop) if i >= 0), default=-1)
            if cut >= 0:
                out = window[offset:cut] if cut >= offset else ""
                if cut < offset:  # the stop string began inside already released text: cannot unsend it
                    out = ""
                self.text += out
                self._pending = ""
                self.stopped = True
                return out
        if final or not self._hold:
            out, self._pending = self._pending, ""
        else:
            keep = self._hold
            out, self._pending = self._pending[:-keep] if len(self._pending) > keep else "", \
                self._pending[-keep:] if len(self._pending) > keep else self._pending
        self.text += out
        return out


def whole_chars(token_bytes: Callable[[int], bytes], tokens: Sequence[int]) -> tuple[list[int], str]:
    """`tokens` less a last character still incomplete (a few tokens at most), and their text. Where generation
    stopped early, the text released so far lags behind the tokens (a possible stop string is held back): this is
    what the tokens themselves say."""
    tokens = list(tokens)
    for n in range(len(tokens), max(len(tokens) - 4, 0) - 1, -1):
        try:
            return tokens[:n], b"".join(token_bytes(t) for t in tokens[:n]).decode("utf-8")
        except UnicodeDecodeError:
            continue
    return tokens, b"".join(token_bytes(t) for t in tokens).decode("utf-8", "replace")
