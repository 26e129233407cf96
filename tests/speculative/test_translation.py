"""Text between two vocabularies (speculative/translation.py), on two real llama.cpp vocabularies that differ (the
tiny models' "a" and "b": the same words at other ids, and words only one of them has)."""

from __future__ import annotations

import random

import pytest

from localspec.runtime.model import Model, ModelSettings
from localspec.speculative.translation import BACKOFF, DraftContext, Retokenizer, whole_len

VOCAB_ONLY = ModelSettings(vocab_only=True)
WORDS = "the a of to file name path read write list run tool call result error json data value key alpha beta".split()


@pytest.fixture(scope="module")
def vocabs(tiny_target, tiny_other_vocab):
    target, draft = Model(tiny_target, VOCAB_ONLY), Model(tiny_other_vocab, VOCAB_ONLY)
    yield target, draft
    draft.close()
    target.close()


def text_of(model: Model, tokens) -> bytes:
    return b"".join(model.token_bytes(t) for t in tokens if t != model.bos)


@pytest.mark.parametrize("data, n", [
    (b"", 0), (b"abc", 3), ("é".encode(), 2), ("é".encode()[:1], 0), (b"a" + "日".encode()[:2], 1),
    ("日".encode(), 3), ("😀".encode()[:3], 0), ("😀".encode(), 4), (b"a\x80", 2),  # a stray byte is not waited on
])
def test_whole_len(data, n):
    assert whole_len(data) == n


def test_the_draft_reads_the_targets_text_as_it_grows(vocabs):
    target, draft = vocabs
    rng = random.Random(0)
    text = "<|im_start|>user\n" + " ".join(rng.choice(WORDS) for _ in range(60)) + "<|im_end|>\n<|im_start|>assistant\n"
    history = target.tokenize(text, add_special=True)
    ctx = DraftContext(target, draft)
    before: list[int] = []
    for n in range(1, len(history) + 1):
        got = ctx.sync(history[:n])
        assert got[0] == draft.bos  # the draft's own BOS (its vocabulary adds one); the target's has no text
        assert text_of(draft, got) == text_of(target, history[:n])
        # Growing costs only the seam: everything but the last BACKOFF tokens stays, so its KV cache does too.
        keep = max(len(before) - BACKOFF, 0)
        assert got[:keep] == before[:keep]
        before = got
    # ChatML's markers are special tokens in both vocabularies: they map to the draft's own.
    assert draft.tokenize("<|im_start|>", add_special=False)[0] in got


def test_a_changed_context_is_cut_back_and_read_again(vocabs):
    target, draft = vocabs
    ctx = DraftContext(target, draft)
    a = target.tokenize(" the file name path read write", add_special=True)
    b = a[:3] + target.tokenize(" json value key", add_special=False)
    for history in (a, b, a[:2], a):
        assert text_of(draft, ctx.sync(history)) == text_of(target, history)


def test_an_unfinished_character_waits(vocabs):
    target, draft = vocabs
    ctx = DraftContext(target, draft)
    history = target.tokenize(" the é", add_special=True)  # é in byte-fallback tokens
    assert ctx.sync(history[:-1]) and ctx.pending == 1
    assert text_of(draft, ctx.sync(history)) == " the é".encode() and ctx.pending == 0


def test_a_proposal_becomes_the_targets_tokens(vocabs):
    target, _ = vocabs
    back = Retokenizer(target)
    history = target.tokenize(" the name", add_special=True)
    # " path list": the last token is dropped (" lis" might still become " list" with more text) unless ended.
    assert back.tokens(history, b" path list", ended=False) == target.tokenize(" path", add_special=False)
    assert back.tokens(history, b" path list", ended=True) == target.tokenize(" path list", add_special=False)
    # The context's last token " nam" would merge with "e path" into " name": the target cannot take " nam" back,
    # so the proposal is tokenized on its own, as the target has to go on.
    history = target.tokenize(" the nam", add_special=True)
    assert target.tokenize(" nam" + "e path", add_special=False)[0] != history[-1]
    assert back.tokens(history, b"e path", ended=True) == target.tokenize("e path", add_special=False)
    # After a special token nothing merges.
    history = target.tokenize("<|im_start|>", add_special=True)
    assert back.tokens(history, b"user\nhi", ended=True) == target.tokenize("user\nhi", add_special=False)
    assert back.tokens(history, b"", ended=True) == []
