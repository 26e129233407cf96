"""Copy-aware lookup on SmolLM2's real tokenizer: file text copied into JSON strings (and back out into prose)."""

import json

import pytest

from localspec.runtime.model import Model
from localspec.speculative.indexes.memory import SpanMemory
from localspec.speculative.sources.copy import CopyDrafter, escape, string_start, unescape_partial
from tests.speculative.fakes import as_pair

FILE = ('def restock(self, sku: str, amount: int) -> int:\n    if amount <= 0:\n'
        '        raise ValueError("amount must be positive")\n    item = self.items[sku]\n'
        '    item.stock += amount\n    return item.stock\n')


class InString:
    """The one grammar question this drafter asks; a real tool-call grammar answers it in test_grammar."""

    def __init__(self, inside: bool):
        self.inside = inside

    def in_string(self) -> bool:
        return self.inside


@pytest.fixture(scope="module")
def m(smollm2):
    return Model(smollm2)


def _drafter(m: Model, **kw) -> CopyDrafter:
    return CopyDrafter(m.token_bytes, lambda t: m.tokenize(t, add_special=False, parse_special=False), **kw)


def _ctx(m: Model, *parts: str) -> list[int]:
    return [t for p in parts for t in m.tokenize(p, add_special=False)]


@pytest.mark.parametrize("escaped, raw, pending", [
    (r'a\nb', "a\nb", ""), (r'say \"hi\"', 'say "hi"', ""), (r'c:\\x', "c:\\x", ""), (r'tab\t', "tab\t", ""),
    ('end\\', "end", "\\"), (r'\u00e9t\u00e', "ét", r"\u00e"), (r'\/', "/", ""), ("", "", ""),
])
def test_unescape_partial(escaped, raw, pending):
    assert unescape_partial(escaped) == (raw, pending)


def test_escape_round_trips_through_json():
    for text in ['a\n"b"\\c\td', "ünï/cøde", "\x01"]:
        assert json.loads('"' + escape(text) + '"') == text
        assert unescape_partial(escape(text)) == (text, "")


@pytest.mark.parametrize("text, start", [
    (b'{"old": "abc', 9), (b'{"old": "a\\"b', 9), (b'{"old": "a\\\\', 9), (b'no quote', -1),
    (b'{"a": "x\\\\\\"y', 7),
])
def test_string_start_skips_escaped_quotes(text, start):
    assert string_start(text) == start


def test_copies_many_lines_of_a_file_into_a_json_string(m):
    d = _drafter(m)
    written = '{"name": "edit_file", "arguments": {"path": "inventory.py", "old": "' + escape(FILE[:40])
    ctx = _ctx(m, "Here is the file:\n", FILE, "<|im_end|>\n<|im_start|>assistant\n", written)
    toks, length = as_pair(d.candidate(ctx, 64, InString(True)))
    text = m.detokenize(toks)
    # The rest of the file, escaped as JSON writes it: newlines as \n, quotes as \", across lines, in one draft.
    assert escape(FILE[40:]).startswith(text) and len(text) > 60
    assert '\\n        raise ValueError(\\"amount' in text
    assert length >= 40  # the whole string so far matched
    # Outside a string (structure, a key) it proposes nothing: that is the grammar's and the closers' business.
    assert as_pair(d.candidate(ctx, 64, InString(False))) == ([], 0)


def test_an_escape_left_half_written_is_completed(m):
    d = _drafter(m)
    head = escape(FILE[:FILE.index("\n") + 1])  # ends with the first line's "\n"
    ctx = _ctx(m, FILE, "<|im_end|>", '{"old": "' + head[:-1])  # written so far ends with a lone backslash
    toks, _ = as_pair(d.candidate(ctx, 32, InString(True)))
    assert m.detokenize(toks).startswith("n    if amount <= 0:\\n")


def test_new_starts_as_a_copy_of_old(m):
    d = _drafter(m)
    old = escape(FILE[:90])
    ctx = _ctx(m, FILE, "<|im_end|>", '{"path": "inventory.py", "old": "' + old + '", "new": "')
    toks, length = as_pair(d.candidate(ctx, 64, InString(True)))
    assert old.startswith(m.detokenize(toks)) and len(m.detokenize(toks)) > 40
    assert length == len(old)
    # Under another key the start of a value is left alone.
    ctx = _ctx(m, FILE, "<|im_end|>", '{"path": "inventory.py", "old": "' + old + '", "note": "')
    assert as_pair(d.candidate(ctx, 64, InString(True))) == ([], 0)


def test_an_earlier_calls_escaped_text_is_not_escaped_twice(m):
    """The most recent occurrence of what is being written is often the escaped `old` of this very call (or an
    earlier call's value): it is read unescaped, so the proposal is the file's text escaped once."""
    d = _drafter(m)
    old = FILE[FILE.index("    item = "):]
    written = ('{"name": "edit_file", "arguments": {"path": "inventory.py", "old": "' + escape(old)
               + '", "new": "    item = self.items[sku]')
    ctx = _ctx(m, "Here is the file:\n", FILE, "<|im_end|>\n<|im_start|>assistant\n", written)
    text = m.detokenize(as_pair(d.candidate(ctx, 64, InString(True)))[0])
    assert text.startswith("\\n    item.stock += amount\\n"), text
    assert "\\\\n" not in text  # no '\\n': a newline escaped twice


def test_a_literal_in_the_files_own_code_stays_as_the_file_has_it(m):
    """Only call values are read unescaped: a string literal in a tool result's code is the file's text."""
    code = 'print("done\\n")\nprint("next step")\n'  # the file holds a backslash and an n
    d = _drafter(m)
    ctx = _ctx(m, "Here is the file:\n", code, "<|im_end|>\n", '{"content": "print(\\"done')
    assert m.detokenize(as_pair(d.candidate(ctx, 64, InString(True)))[0]).startswith('\\\\n\\")\\nprint(\\"next')


def test_text_of_an_earlier_call_is_copied_unescaped_into_prose(m):
    d = _drafter(m)
    call = json.dumps({"path": "a.py", "content": FILE})
    ctx = _ctx(m, "<|im_start|>assistant\n", call, "<|im_end|>\n<|im_start|>assistant\nI wrote:\n",
               FILE[:60])
    toks, _ = as_pair(d.candidate(ctx, 48, None))
    assert FILE[60:].startswith(m.detokenize(toks)) and "\n" in m.detokenize(toks)


def test_short_or_absent_matches_propose_nothing(m):
    d = _drafter(m)
    assert as_pair(d.candidate(_ctx(m, FILE, "<|im_end|>", "completely different words here"), 32, None)) == ([], 0)
    # In a string, a tail that occurs nowhere else proposes nothing.
    assert as_pair(d.candidate(_ctx(m, FILE, "<|im_end|>", '{"old": "zzqx wholly new text'), 32, InString(True))) == ([], 0)
    # A match never runs across a turn marker.
    toks, _ = as_pair(d.candidate(_ctx(m, "alpha beta gamma delta epsilon<|im_end|>zeta", "<|im_end|>",
                                '{"old": "alpha beta gamma delta epsilon'), 32, InString(True)))
    assert toks == []


def test_memory_finds_spans_by_index_and_never_across_documents():
    mem = SpanMemory(key_bytes=8)
    mem.add(FILE.encode())
    mem.add(b"other document\n    item.stock += 1000\nmore")
    # The query's last line start anchors the lookup; the most recent document wins among equals.
    follow, length = mem.find(b"unrelated prefix\n    item.stock += ", 64)
    assert (follow, length) == (b"1000\nmore", len(b"\n    item.stock += "))
    follow, length = mem.find(b"x\n    if amount <= 0:\n        raise", 200)
    assert follow.startswith(b' ValueError("amount must be positive")') and length > 30
    assert mem.find(b"no anchor in this query at all", 64) == (b"", 0)
    assert mem.find(b"q\nnothing like it was stored", 64) == (b"", 0)
    # A document is added once; when full, the oldest half goes, whole documents at a time.
    size = len(mem)
    mem.add(FILE.encode())
    assert len(mem) == size
    small = SpanMemory(max_bytes=300, key_bytes=8)
    for i in range(10):
        small.add(f"doc {i}\nline of document number {i} with some padding text\n".encode())
    assert len(small) <= 300 and small.find(b"x\nline of document number 9", 16)[0] == b" with some paddi"
    assert small.find(b"x\nline of document number 0", 16) == (b"", 0)


def test_a_new_request_finds_what_an_earlier_one_wrote(m):
    """The server's case: the same kind of request again. The first context is dropped for the second, and the
    text it held (a whole file written in a call) is proposed from memory."""
    d = _drafter(m, memory=SpanMemory())
    first = _ctx(m, "<|im_start|>user\nWrite the file.<|im_end|>\n<|im_start|>assistant\n",
                 json.dumps({"path": "a.py", "content": FILE}))
    assert as_pair(d.candidate(first, 8, None)) is not None  # indexes the first request
    second = _ctx(m, "<|im_start|>user\nAnd again, please.<|im_end|>\n<|im_start|>assistant\n",
                  '{"path": "b.py", "content": "' + escape(FILE[:70]))
    toks, length = as_pair(d.candidate(second, 64, InString(True)))
    assert escape(FILE[70:]).startswith(m.detokenize(toks)) and len(m.detokenize(toks)) > 40 and length >= 12
    # Without memory the second request has nothing to copy from.
    assert as_pair(_drafter(m).candidate(second, 64, InString(True))) == ([], 0)


def test_calls_from_an_earlier_session_seed_the_memory(m):
    mem = SpanMemory()
    _drafter(m, memory=mem).add_call_tokens([], json.dumps({"path": "a.py", "content": FILE}), "write_file")
    d = _drafter(m, memory=mem)  # a new session sharing the memory
    ctx = _ctx(m, "<|im_start|>assistant\n", '{"path": "a.py", "old": "' + escape(FILE[:60]))
    toks, _ = as_pair(d.candidate(ctx, 32, InString(True)))
    assert escape(FILE[60:]).startswith(m.detokenize(toks)) and toks


def test_a_copy_marks_its_line_starts_and_the_value_it_goes_into(m):
    """Where a line of the copied text starts is where an edit's `old` usually stops: the drafter's Candidate marks
    the first token past each escaped newline (Candidate.breaks), and its key says which value it copies into."""
    d = _drafter(m)
    written = '{"name": "edit_file", "arguments": {"path": "inventory.py", "old": "' + escape(FILE[:40])
    found = d.candidate(_ctx(m, "Here is the file:\n", FILE, "<|im_end|>\n", written), 64, InString(True))
    toks = found.tokens
    assert found.key == "copy:old" and found.breaks
    for i in found.breaks:  # each mark is the first token after a newline of the file
        assert m.detokenize(toks[:i]).endswith("\\n") or m.detokenize(toks[:i + 1]).split("\\n")[-1].strip()
    assert len(found.breaks) == m.detokenize(toks).count("\\n") - m.detokenize(toks).endswith("\\n")
    d2 = _drafter(m)
    found = d2.candidate(_ctx(m, FILE, "<|im_end|>\n", '{"content": "' + escape(FILE[:40])), 64, InString(True))
    assert found.key == "copy:content"
    found = d2.candidate(_ctx(m, FILE, "<|im_end|>\n", "The file starts with " + FILE[:40]), 64, None)
    assert found.key == "copy" and found.breaks == ()  # prose: no marks
