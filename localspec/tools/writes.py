"""write_file and edit_file: planned first (diff + danger, shown to the approver), applied after.

Why two phases: the user must see exactly what will change before anything touches the disk,
and applying re-checks that the file did not change in between.
"""
from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass

from .atomic import atomic_write
from .danger import Danger, rate_write
from .limits import Limits
from .paths import Resolved, Workspace
from .result import ToolError
from .sniff import human_size, is_binary


@dataclass
class WritePlan:
    raw_path: str
    target: Resolved
    old: bytes | None  # None: file does not exist yet
    new: bytes
    diff: str
    danger: Danger
    summary: str  # one line for the approver, e.g. "overwrite src/x.py (+3 -1 lines)"
    added: int
    removed: int

    @property
    def unchanged(self) -> bool:
        return self.old == self.new


def plan_write(ws: Workspace, path: str, content: str) -> WritePlan:
    target = ws.resolve(path)
    old = _read_existing(target)
    new = _encode(content)
    if old is not None and is_binary(old[:8192]):
        diff = f"(binary file {target.rel}, {human_size(len(old))}, will be replaced by text)"
        added, removed = content.count("\n"), 0
    else:
        diff, added, removed = make_diff(target.rel, old, content)
    old_lines = old.count(b"\n") if old is not None else 0
    danger = rate_write(target.rel, exists=old is not None, old_lines=old_lines, new_lines=content.count("\n"))
    verb = "create" if old is None else "overwrite"
    return WritePlan(path, target, old, new, diff, danger, f"{verb} {target.rel} (+{added} -{removed} lines)",
                     added, removed)


def plan_edit(ws: Workspace, path: str, old_text: str, new_text: str) -> WritePlan:
    target = ws.resolve(path)
    old = _read_existing(target)
    if old is None:
        raise ToolError(f"{target.rel!r} does not exist; use write_file to create it")
    try:
        text = old.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{target.rel!r} is not UTF-8 text; edit_file only edits text files") from None
    if old_text == "":
        raise ToolError("argument 'old' is empty; give the exact text to replace")
    if old_text == new_text:
        raise ToolError("arguments 'old' and 'new' are identical; nothing to change")
    count = text.count(old_text)
    if count == 0 and "\r\n" in text and "\n" in old_text and "\r\n" not in old_text:
        # The model usually writes "\n"; match a CRLF file anyway and keep its line endings.
        old_text, new_text = old_text.replace("\n", "\r\n"), new_text.replace("\n", "\r\n")
        count = text.count(old_text)
    if count == 0:
        raise ToolError(f"'old' text not found in {target.rel!r} (0 matches); read the file and copy the exact text, "
                        "including whitespace")
    if count > 1:
        raise ToolError(f"'old' text matches {count} times in {target.rel!r}; include more surrounding lines so it "
                        "matches exactly once")
    content = text.replace(old_text, new_text, 1)
    diff, added, removed = make_diff(target.rel, old, content)
    danger = rate_write(target.rel, exists=True, edit=True)
    return WritePlan(path, target, old, _encode(content), diff, danger,
                     f"edit {target.rel} (+{added} -{removed} lines)", added, removed)


def apply_plan(ws: Workspace, plan: WritePlan, limits: Limits) -> str:
    """Write the planned bytes atomically; returns the result text for the model."""
    if ws.resolve(plan.raw_path).real != plan.target.real:
        raise ToolError(f"{plan.target.rel!r} moved since it was checked; try again")
    if _read_existing(plan.target) != plan.old:
        raise ToolError(f"{plan.target.rel!r} changed since the diff was made; read it again and retry")
    try:
        os.makedirs(plan.target.real.parent, exist_ok=True)
        atomic_write(plan.target.real, plan.new)
    except OSError as exc:
        reason = exc.strerror or exc
        raise ToolError(f"could not write {plan.target.rel!r}: {reason}; the old file is unchanged") from None
    if plan.old is None:
        lines = plan.new.count(b"\n") + (0 if plan.new.endswith(b"\n") or not plan.new else 1)
        return f"Created {plan.target.rel} ({lines} lines, {len(plan.new)} bytes)"
    diff = plan.diff
    if len(diff) > limits.diff_chars:
        diff = diff[:limits.diff_chars] + f"\n[diff truncated at {limits.diff_chars} characters]"
    return f"Updated {plan.target.rel} (+{plan.added} -{plan.removed} lines)\n{diff}"


def make_diff(rel: str, old: bytes | None, new_text: str) -> tuple[str, int, int]:
    """Unified diff (git style headers); returns (diff, added lines, removed lines)."""
    old_text = "" if old is None else old.decode("utf-8", errors="replace")
    a = _lines(old_text)
    b = _lines(new_text)
    out = list(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{rel}", f"b/{rel}", n=3))
    added = sum(1 for line in out if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in out if line.startswith("-") and not line.startswith("---"))
    return "".join(out), added, removed


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _read_existing(target: Resolved) -> bytes | None:
    try:
        st = target.real.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolError(f"cannot access {target.rel!r}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{target.rel!r} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{target.rel!r} is not a regular file")
    try:
        return target.real.read_bytes()
    except OSError as exc:
        raise ToolError(f"cannot read {target.rel!r}: {exc.strerror or exc}") from None


def _encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"content cannot be encoded as UTF-8 ({exc.reason} at position {exc.start})") from None
