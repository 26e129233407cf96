"""Where a copy resumes after the lines an edit changed or inserted.

An edit's `new` (or a rewritten file's `content`) is mostly the old text: copied up to the change, then a changed
or inserted line or two, then the old text again. The copy drafter follows the first part; after the change the
text written so far ends in lines the context never held, so no match of its tail says where the old text goes
on. Here the last line that is a copy (the anchor) is found, and the new lines after it are taken either as
replacing as many old lines (a changed line: `x = 5` where the old text had `x = 1`; the old text resumes after
them) or as inserted before the old line that followed the anchor (it resumes there), whichever the first new line
resembles. Where the guess is wrong the next line start guesses again.
"""

from __future__ import annotations

from localspec.speculative.indexes.prefix import shared_len

MAX_NEW_LINES = 6  # new lines looked back over for the anchor: an edit's change is a few lines
MIN_ANCHOR = 12  # bytes of copied text the anchor must end with (a lone `}` line matches anywhere)
SIMILAR = 0.5  # a new line sharing this share of its first characters with the old line replaces it


def resume_at(written: bytes, source: bytes) -> tuple[int, int] | None:
    """Where in `source` the old text plausibly resumes now (an offset at a line start), and how long the anchor
    found there is; None if `written` is not at a line start after new lines, or no anchor is found.

    `written` is the string so far (raw); it must end at a line start, optionally with that line's indentation
    written already (then the offset is past the same indentation in `source`)."""
    cut = written.rfind(b"\n")
    if cut < 0:
        return None
    indent = written[cut + 1:]
    if indent.strip():
        return None  # inside a line: what goes on is the line's own business
    lines = written[:cut].split(b"\n")  # the complete lines (each ended by a newline)
    for n_new in range(1, min(MAX_NEW_LINES, len(lines) - 1) + 1):
        head = b"\n".join(lines[:-n_new]) + b"\n"
        anchor = _anchor(head, source)
        if anchor is None:
            continue
        at, length = anchor
        new = lines[-n_new:]
        olds = source[at:].split(b"\n", n_new + 1)
        if len(olds) <= n_new:
            return None
        first_new, first_old = new[0].strip(), olds[0].strip()
        if first_new and first_old:
            replaced = shared_len(first_new, first_old) >= SIMILAR * min(len(first_new), len(first_old))
        else:
            replaced = first_new == first_old  # a blank line inserted before text, or one replacing a blank line
        skip = n_new if replaced else 0  # a changed line replaces its old line; an inserted one pushes it down
        pos = at + sum(len(x) + 1 for x in olds[:skip])
        if indent:
            if not source.startswith(indent, pos):
                return None
            pos += len(indent)
        if source.startswith(b"\n".join(new) + b"\n", at):  # the "new" lines were a copy after all
            return None
        return pos, length
    return None


def _anchor(head: bytes, source: bytes) -> tuple[int, int] | None:
    """(offset in `source` just after the latest occurrence of the longest tail of `head` that ends a line there, at
    least MIN_ANCHOR bytes; its length), or None."""
    tail = head[-MIN_ANCHOR:]
    if len(tail) < MIN_ANCHOR:
        return None
    pos = source.rfind(tail)
    if pos < 0:
        return None
    length = MIN_ANCHOR
    while length < len(head) and pos > 0 and source[pos - 1] == head[-length - 1]:
        pos -= 1
        length += 1
    return pos + length, length
