"""The context as text: each token's bytes (control tokens as one marker byte that no match runs across), kept in
step with the tokens as they are appended and rolled back. The text sources (textlookup, spans, toolnames, copy) and
the span memory match on it."""

from __future__ import annotations

from typing import Callable, Sequence

from localspec.speculative.indexes.prefix import common_prefix

CONTROL = b"\x00"  # stands for a control token (turn markers): no match runs across one


def context_piece(token_bytes: Callable[..., bytes]) -> Callable[[int], bytes]:
    """A token's text for matching, with control tokens (turn markers) as CONTROL."""

    cache: dict[int, bytes] = {}  # a call into llama.cpp per token otherwise, for every token of every draft

    def piece(t: int) -> bytes:
        text = cache.get(t)
        if text is None:
            text = token_bytes(t, special=False)
            text = cache[t] = text if text or not token_bytes(t) else CONTROL
        return text

    return piece


TAIL_TOKENS = 8  # enough tokens to spell a call's structure just written ('"name": "', '": ') in any tokenisation


def tail_text(piece: Callable[[int], bytes], context: Sequence[int]) -> bytes:
    """The text of the context's last few tokens: where in a call the context ends, told without syncing a
    TextIndex of the whole context (drafters that act only at some places check this first)."""
    return b"".join(map(piece, context[-TAIL_TOKENS:]))


class TextIndex:
    """The context as UTF-8 bytes, kept in step with its tokens (appends and rollbacks are incremental)."""

    def __init__(self, piece: Callable[[int], bytes]):
        self._piece = piece
        self.tokens: list[int] = []
        self.ends: list[int] = []  # byte offset just after each token
        self.text = bytearray()

    def sync(self, tokens: Sequence[int]) -> None:
        own = self.tokens
        n = common_prefix(own, tokens)
        if n < len(own):
            del own[n:], self.ends[n:]
            del self.text[self.ends[-1] if self.ends else 0:]
        for t in tokens[n:]:
            own.append(t)
            self.text += self._piece(t)
            self.ends.append(len(self.text))
