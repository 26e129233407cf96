"""Where a copy resumes after an edit's changed or inserted lines (indexes/resume.py), on literal text, and the
copy drafter proposing it inside a JSON string on SmolLM2's tokenizer."""

from __future__ import annotations

import pytest

from localspec.runtime.model import Model
from localspec.speculative.indexes.resume import resume_at
from localspec.speculative.sources.copy import CopyDrafter, escape

SRC = b"def restock(self, amount):\n    x = 1\n    y = 2\n    return x + y\n"
HEAD = b"def restock(self, amount):\n"


@pytest.mark.parametrize("written, resumes_with", [
    (HEAD + b"    x = 5\n", b"    y = 2\n"),  # a changed line: the old text goes on after the line it replaced
    (HEAD + b"    x = 5\n    ", b"y = 2\n"),  # ... the indentation already written
    (HEAD + b"    if amount:\n", b"    x = 1\n"),  # an inserted line: the old line after the anchor is pushed down
    (HEAD + b"    if amount:\n        amount += 1\n", b"    x = 1\n"),  # two inserted lines
    (HEAD + b"\n", b"    x = 1\n"),  # an inserted blank line
    (HEAD + b"    x = 5\n    y = 6\n", b"    return x + y\n"),  # two changed lines
])
def test_the_old_text_resumes_after_new_lines(written, resumes_with):
    at, length = resume_at(written, SRC)
    assert SRC[at:].startswith(resumes_with) and length == len(HEAD)


@pytest.mark.parametrize("written", [
    HEAD + b"    x = 5",  # inside a line: the line's own business
    HEAD + b"    x = 1\n",  # no new line: the plain copy follows it
    b"    x = 5\n",  # nothing copied before the new line: no anchor
    b"}\n    x = 5\n",  # an anchor too short to say where (a lone brace matches anywhere)
    HEAD + b"    x = 5\n  \t",  # indentation the old text does not have there
])
def test_no_guess_without_a_line_start_after_new_lines_and_a_real_anchor(written):
    assert resume_at(written, SRC) is None


def test_the_copy_drafter_resumes_the_old_value_inside_new(smollm2):
    m = Model(smollm2)
    d = CopyDrafter(m.token_bytes, lambda t: m.tokenize(t, add_special=False, parse_special=False))
    old = SRC.decode()
    new_so_far = old[:old.index("    x")] + "    x = 5\n"
    text = '{"name": "edit_file", "arguments": {"path": "a.py", "old": "' + escape(old) + '", "new": "' + \
        escape(new_so_far)
    ctx = m.tokenize("Here is a.py:\n" + old + "<|im_end|>\n<|im_start|>assistant\n" + text, add_special=False)

    class InString:
        def in_string(self):
            return True

    found = d.candidate(ctx, 32, InString())
    assert m.detokenize(found.tokens).startswith(escape("    y = 2\n    return"))
    assert found.key == "copy:resume" and d.bucket(found.match) == 1  # its own rates, a weak guess at first
