"""The texts that a model's tokenizer turns into the chat format's own marker tokens.

llama.cpp splits these out of the text before the normal tokenizer runs: CONTROL tokens (turn markers such as
`<|im_start|>`, `<|eot_id|>`, `[INST]`, `<|channel|>`) when `parse_special` is on, and USER_DEFINED tokens
(Qwen's `<tool_call>` and `<think>`, Gemma's `<start_of_turn>`) always. Both kinds are structure: they must come
from the chat template, never from a message (see neutralize.py and prompt.py).

Every CONTROL token counts. A USER_DEFINED token counts when it is spelled like a special token (`<|...|>`,
`[INST]`), or when it is a tag (`<...>`) that the template or the tool-call format writes: vocabularies also hold
user-defined pieces that are ordinary text (Gemma's `<table>` and runs of newlines), and those stay as they are.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from functools import lru_cache

# llama.h enum llama_token_attr
ATTR_UNKNOWN = 1 << 0
ATTR_CONTROL = 1 << 3
ATTR_USER_DEFINED = 1 << 4

# A user-defined token is markup when it looks like a tag; Gemma's runs of newlines are user-defined too, and
# ordinary text.
_TAG = re.compile(r"^[<\[][^\s]+[>\]]$")
# Spelled the way only special tokens are (<|...|>, <|...>, <...|>, <｜...｜>, [UPPER_CASE]): markup even where this
# template does not write it (llama.cpp makes gpt-oss's <|constrain|> user-defined).
_SPECIAL_SHAPE = re.compile(r"^(?:<\|[^\s]*>|<[^\s]*\|>|<｜[^\s]*｜>|\[/?[A-Z][A-Z0-9_]*\])$")

# model -> [(token id, text, attributes)] of its special tokens; a vocabulary scan costs ~0.1 s per 100k tokens.
_SPECIALS: "weakref.WeakKeyDictionary[object, tuple[tuple[int, str, int], ...]]" = weakref.WeakKeyDictionary()
_MARKERS: "weakref.WeakKeyDictionary[object, dict[str, Markers]]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Markers:
    texts: frozenset[str]  # marker texts that message content must not turn into tokens
    ids: frozenset[int]  # token ids those texts (and every control token) stand for
    pattern: re.Pattern | None  # finds any of `texts`, longest first; None when there are none


def special_tokens(model) -> tuple[tuple[int, str, int], ...]:
    """(id, text, attributes) of every CONTROL, USER_DEFINED or UNKNOWN token of the model's vocabulary."""
    try:
        return _SPECIALS[model]
    except (KeyError, TypeError):
        pass
    from localspec.runtime.llama import lib

    mask = ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED
    out = []
    for tok in range(model.n_vocab):
        attr = lib.llama_vocab_get_attr(model.vocab, tok)
        if attr & mask:
            out.append((tok, model.token_text(tok), attr))
    found = tuple(out)
    try:
        _SPECIALS[model] = found
    except TypeError:  # not weak-referenceable: no cache
        pass
    return found


def model_markers(model, structure: str) -> Markers:
    """The markers of `model` for a prompt whose fixed parts (template source, tool-call format markers) are
    `structure`."""
    try:
        return _MARKERS[model][structure]
    except (KeyError, TypeError):
        pass
    texts, ids = set(), set()
    for tok, text, attr in special_tokens(model):
        if attr & (ATTR_CONTROL | ATTR_UNKNOWN):
            ids.add(tok)
            if text:
                texts.add(text)
        elif _SPECIAL_SHAPE.match(text) or (_TAG.match(text) and text in structure):
            ids.add(tok)
            texts.add(text)
    found = Markers(frozenset(texts), frozenset(ids), marker_pattern(frozenset(texts)))
    try:
        _MARKERS.setdefault(model, {})[structure] = found
    except TypeError:  # not weak-referenceable: no cache
        pass
    return found


@lru_cache(maxsize=16)
def marker_pattern(texts: frozenset[str]) -> re.Pattern | None:
    """One regex for all marker texts, built as a trie so a scan costs one step per character however many
    markers a vocabulary has (Gemma has thousands); at each position the longest marker wins."""
    if not texts:
        return None
    # Very long marker texts (none in real vocabularies) stay out of the trie: regex nesting depth is bounded.
    long = sorted((t for t in texts if len(t) > 64), key=len, reverse=True)
    trie: dict = {}
    for text in (t for t in texts if len(t) <= 64):
        node = trie
        for ch in text:
            node = node.setdefault(ch, {})
        node[""] = {}
    return re.compile("|".join([re.escape(t) for t in long] + ([_trie_regex(trie)] if trie else [])))


def _trie_regex(node: dict) -> str:
    ends = "" in node
    alts = [re.escape(ch) + _trie_regex(child) for ch, child in sorted(node.items()) if ch]
    if not alts:
        return ""
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    if ends:  # a marker ends here, a longer one may go on: try the longer first (greedy)
        return f"(?:{body})?"
    return body
