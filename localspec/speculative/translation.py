"""Text between two vocabularies, for a draft model of another family (sources/translated.py): the target's context
as the draft's tokens, kept as the context grows, and the draft's text as the target's tokens.

The target's tokens are turned into bytes, the bytes into the draft's tokens. Keeping the draft's tokens in step
with a growing context costs only the new text: the draft's last BACKOFF tokens and the new text are tokenized
again (a merge across the seam can change them), everything before stays, so the draft model's KV cache keeps its
prefix. Where the context changes (a rejected draft, another conversation), the draft's tokens are cut back to
before the change. The draft's tokens need not be the canonical tokenization of the whole text: they only steer
the draft model, and every token it leads to is verified by the target.

Going back, a proposal's text is tokenized with the target's vocabulary together with the context's last token
(HF's universal assisted generation does the same): the text may merge with it (" capit" + "al" is " capital"),
and the target cannot take back a token it wrote, so where that token would not survive the merge the proposal is
tokenized on its own (the target then has to go on from " capit", as it will). The proposal's last token is
dropped unless the draft ended its text: more text might merge into it.

Special tokens keep their text (`<start_of_turn>`), tokenized as special tokens wherever the other vocabulary has
them (ChatML's markers in both families), as plain text elsewhere; the BOS token has no text.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Protocol, Sequence

from localspec.speculative.indexes.prefix import common_prefix

BACKOFF = 2  # the draft's last tokens tokenized again with new text: merges across the seam may change them


class Vocabulary(Protocol):
    """What translation needs of a model (runtime Model has it)."""

    bos: int
    add_bos: bool

    def token_bytes(self, token: int, *, special: bool = True) -> bytes: ...

    def tokenize(self, text: str, *, add_special: bool | None = None, parse_special: bool = True) -> list[int]: ...


def whole_len(data: bytes | bytearray) -> int:
    """The length of `data` less an unfinished UTF-8 character at its end."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        b = data[n - back]
        if b < 0x80:
            return n  # ASCII last (or stray continuation bytes after it: not UTF-8, decoded as replacements)
        if b >= 0xC0:  # the lead byte of the last character: whole if all its continuation bytes are there
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return n if back >= need else n - back
    return n


class Pieces:
    """A vocabulary's token bytes, cached (the BOS token has none: it is structure, not text)."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab
        self._cache: dict[int, bytes] = {}

    def __call__(self, token: int) -> bytes:
        got = self._cache.get(token)
        if got is None:
            got = b"" if token == self.vocab.bos else self.vocab.token_bytes(token, special=True)
            self._cache[token] = got
        return got


class DraftContext:
    """The target's context as the draft model's tokens, kept in step with it (sync)."""

    def __init__(self, target: Vocabulary, draft: Vocabulary):
        self.target_piece = Pieces(target)
        self.draft = draft
        self.draft_piece = Pieces(draft)
        self.start = [draft.bos] if draft.add_bos and draft.bos >= 0 else []
        self.tokens: list[int] = []  # the target tokens translated
        self.ends: list[int] = []  # where each one's bytes end in `text`
        self.text = bytearray()
        self.draft_tokens: list[int] = []
        self.draft_ends: list[int] = []  # where each draft token's bytes end in `text`
        self.pending = 0  # bytes at the end of `text` not in the draft's tokens: an unfinished character

    def reset(self) -> None:
        self.tokens, self.ends, self.text = [], [], bytearray()
        self.draft_tokens, self.draft_ends, self.pending = [], [], 0

    def sync(self, history: Sequence[int]) -> list[int]:
        """The draft's tokens for the target's `history` (its BOS first where the draft's vocabulary adds one);
        `pending` then says how many bytes at the end were left out (an unfinished character)."""
        p = common_prefix(self.tokens, history)
        changed = len(self.text)
        if p < len(self.tokens):
            changed = self.ends[p - 1] if p else 0
            del self.tokens[p:], self.ends[p:], self.text[changed:]
        for tok in history[p:]:
            self.text += self.target_piece(tok)
            self.tokens.append(tok)
            self.ends.append(len(self.text))
        whole = whole_len(self.text)
        self.pending = len(self.text) - whole
        covered = self.draft_ends[-1] if self.draft_ends else 0
        if covered == whole and changed >= whole:
            return self.start + self.draft_tokens
        keep = max(bisect_right(self.draft_ends, min(changed, whole)) - BACKOFF, 0)
        begin = self.draft_ends[keep - 1] if keep else 0
        del self.draft_tokens[keep:], self.draft_ends[keep:]
        if whole > begin:
            self._append(bytes(self.text[begin:whole]), begin)
        return self.start + self.draft_tokens

    def _append(self, data: bytes, begin: int) -> None:
        toks = self.draft.tokenize(data.decode("utf-8", "replace"), add_special=False, parse_special=True)
        pos, end = begin, begin + len(data)
        for tok in toks:
            # A tokenizer that adds a leading space, or text that was not valid UTF-8, makes the pieces' lengths
            # differ from the text's: the ends then only bound where a cut falls, which only costs draft quality.
            pos = min(pos + len(self.draft_piece(tok)), end)
            self.draft_tokens.append(tok)
            self.draft_ends.append(pos)
        if toks:
            self.draft_ends[-1] = end


class Retokenizer:
    """A draft's text as the target's tokens after the context (see the module's docstring)."""

    def __init__(self, target: Vocabulary):
        self.target = target
        self.piece = Pieces(target)
        self._specials: dict[int, bool] = {}

    def special(self, token: int) -> bool:
        """A control token (no text of its own outside special rendering): nothing merges with it."""
        got = self._specials.get(token)
        if got is None:
            got = self._specials[token] = not self.target.token_bytes(token, special=False)
        return got

    def tokens(self, history: Sequence[int], text: bytes, *, ended: bool) -> list[int]:
        """The target's tokens for `text` after `history`; the last one left out unless `ended` (the draft ended
        its text: nothing follows that could merge into it)."""
        if not text:
            return []
        last = history[-1] if history else -1
        out = None
        if last >= 0 and not self.special(last):
            tail = self.piece(last)
            both = self._tokenize(tail + text)
            if both[:1] == [last]:
                out = both[1:]
        if out is None:
            out = self._tokenize(text)
        return out if ended else out[:-1]

    def _tokenize(self, data: bytes) -> list[int]:
        return self.target.tokenize(data.decode("utf-8", "replace"), add_special=False, parse_special=True)
