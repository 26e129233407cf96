"""Incremental detokenisation: multi-byte characters split over byte tokens, stop strings across tokens."""

from localspec.runtime.model import Model
from localspec.speculative.detok import TextStream


def test_multibyte_character_never_split(tiny_target):
    m = Model(tiny_target)
    toks = m.tokenize("a ✓ é 日本", add_special=False)
    stream = TextStream(m.token_bytes)
    pieces = [stream.feed(t) for t in toks] + [stream.finish()]
    assert "".join(pieces) == m.detokenize(toks)
    assert all("\ufffd" not in p for p in pieces)
    assert len(toks) > len("a ✓ é 日本")  # byte-fallback tokens really were involved


def test_stop_string_across_tokens():
    pieces = {1: b"hel", 2: b"lo wo", 3: b"rld", 4: b"!"}
    s = TextStream(pieces.__getitem__, stop=["o wor"])
    out = "".join(s.feed(t) for t in (1, 2, 3, 4)) + s.finish()
    assert out == "hell" and s.stopped


def test_hold_back_released_at_finish():
    pieces = {1: b"ab", 2: b"cd"}
    s = TextStream(pieces.__getitem__, stop=["xyz"])
    out = s.feed(1) + s.feed(2)
    assert out == "ab"  # "cd" could still start "xyz"? no, but the tail is held until it can't matter
    assert out + s.finish() == "abcd"
