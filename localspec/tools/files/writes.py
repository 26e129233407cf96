"""write_file and edit_file: planned first (diff + danger, shown to the approver), applied after.

Why two phases: the user must see exactly what will change before anything touches the disk,
and applying re-checks that the file did not change in between.
Why fingerprints, not copies: the old file may be huge. It is streamed once into a size and a
SHA-256 (kept in memory only when small enough to diff), so memory stays bounded by Limits, and
applying compares fingerprints. Files are opened and replaced through directory descriptors
(paths.Workspace.open_parent, atomic.atomic_write_at), never by a path that could have changed.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field

from localspec.tools.files.atomic import atomic_write_at
from localspec.tools.files.confine import Resolved, Workspace, file_kind, open_entry
from localspec.tools.files.sniff import SNIFF_BYTES, human_size, is_binary
from localspec.tools.files.textdiff import text_diff
from localspec.tools.limits import Limits
from localspec.tools.safety.danger import Danger, rate_write
from localspec.tools.tool_result import ToolError

_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class FileState:
    """What a file was when the plan was made: compared (size, digest) before writing."""
    size: int
    digest: bytes
    lines: int = field(compare=False)
    head: bytes = field(compare=False, repr=False)


@dataclass
class WritePlan:
    raw_path: str
    target: Resolved
    old: bytes | None  # the old content when it exists and is small enough to diff; else None
    new: bytes
    diff: str
    danger: Danger
    summary: str  # one line for the approver, e.g. "overwrite src/x.py (+3 -1 lines)"
    added: int
    removed: int
    old_state: FileState | None = None  # None: the file does not exist yet

    @property
    def exists(self) -> bool:
        return self.old_state is not None

    @property
    def unchanged(self) -> bool:
        return self.old_state is not None and self.old_state == _fingerprint(self.new)


def plan_write(ws: Workspace, path: str, content: str, limits: Limits | None = None) -> WritePlan:
    limits = limits or Limits()
    target = ws.resolve(path)
    new = _encode(content)
    state, old = _read_existing(ws, target, keep=limits.diff_input_bytes)
    new_lines = content.count("\n")
    removed_all = state.lines if state else 0
    too_big = (state is not None and old is None) or len(new) > limits.diff_input_bytes
    if state is not None and state == _fingerprint(new):
        diff, added, removed = "", 0, 0
    elif state is not None and is_binary(state.head):
        diff = f"(binary file {target.rel}, {human_size(state.size)}, will be replaced by text)"
        added, removed = new_lines, 0
    elif too_big:
        sizes = f"{human_size(state.size)} -> {human_size(len(new))}" if state else human_size(len(new))
        diff = (f"(no diff shown: {target.rel}, {sizes}, is too large to diff (limit "
                f"{human_size(limits.diff_input_bytes)}); all {removed_all} old lines replaced by "
                f"{new_lines} new lines)")
        added, removed = new_lines, removed_all
    else:
        diff, added, removed = text_diff(target.rel, None if old is None else _decode(old), content, limits)
    danger = rate_write(target.rel, exists=state is not None, old_lines=removed_all, new_lines=new_lines,
                       real=target.real)
    verb = "create" if state is None else "overwrite"
    summary = f"{verb} {target.rel} (+{added} -{removed} lines)"
    if too_big:
        summary += f" [{human_size(len(new))}; too large to diff]"
    return WritePlan(path, target, old, new, diff, danger, summary, added, removed, state)


def plan_edit(ws: Workspace, path: str, old_text: str, new_text: str, limits: Limits | None = None) -> WritePlan:
    limits = limits or Limits()
    target = ws.resolve(path)
    state, old = _read_existing(ws, target, keep=limits.edit_file_bytes, refuse_over=limits.edit_file_bytes)
    if state is None or old is None:
        raise ToolError(f"{target.rel!r} does not exist; use write_file to create it")
    try:
        text = old.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{target.rel!r} is not UTF-8 text; edit_file only edits text files") from None
    del old  # only the text is needed from here; keeps the peak at about two copies of the file
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
    diff, added, removed = text_diff(target.rel, text, content, limits)
    danger = rate_write(target.rel, exists=True, edit=True, real=target.real)
    return WritePlan(path, target, None, _encode(content), diff, danger,
                     f"edit {target.rel} (+{added} -{removed} lines)", added, removed, state)


def apply_plan(ws: Workspace, plan: WritePlan, limits: Limits) -> str:
    """Write the planned bytes atomically; returns the result text for the model."""
    if ws.resolve(plan.raw_path).real != plan.target.real:
        raise ToolError(f"{plan.target.rel!r} moved since it was checked; try again")
    opened = ws.open_parent(plan.target)
    try:
        current = None if opened is None else _state_at(opened[0], opened[1], plan.target, keep=0)[0]
        if current != plan.old_state:
            raise ToolError(f"{plan.target.rel!r} changed since the diff was made; read it again and retry")
        if opened is None:  # a new file in new directories: make them now, each opened no-follow
            opened = ws.open_parent(plan.target, create=True)
        dir_fd, name = opened
        try:
            atomic_write_at(dir_fd, name, plan.new)
        except OSError as exc:
            reason = exc.strerror or exc
            raise ToolError(f"could not write {plan.target.rel!r}: {reason}; the old file is unchanged") from None
    finally:
        if opened is not None:
            os.close(opened[0])
    if plan.old_state is None:
        lines = plan.new.count(b"\n") + (0 if plan.new.endswith(b"\n") or not plan.new else 1)
        return f"Created {plan.target.rel} ({lines} lines, {len(plan.new)} bytes)"
    diff = plan.diff
    if len(diff) > limits.diff_chars:
        diff = diff[:limits.diff_chars] + f"\n[diff truncated at {limits.diff_chars} characters]"
    return f"Updated {plan.target.rel} (+{plan.added} -{plan.removed} lines)\n{diff}"


def _read_existing(ws: Workspace, target: Resolved, *, keep: int,
                   refuse_over: int | None = None) -> tuple[FileState | None, bytes | None]:
    """(fingerprint, content if at most keep bytes) of the target, or (None, None) if it does not exist."""
    opened = ws.open_parent(target)
    if opened is None:
        return None, None
    dir_fd, name = opened
    try:
        return _state_at(dir_fd, name, target, keep=keep, refuse_over=refuse_over)
    finally:
        os.close(dir_fd)


def _state_at(dir_fd: int, name: str, target: Resolved, *, keep: int,
              refuse_over: int | None = None) -> tuple[FileState | None, bytes | None]:
    opened = open_entry(dir_fd, name, target, missing_ok=True)
    if opened is None:
        return None, None
    fd, st = opened
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{target.rel!r} is a directory")
        raise ToolError(f"{target.rel!r} is {file_kind(st.st_mode)}, not a regular file; not replaced")
    with os.fdopen(fd, "rb") as fh:
        if refuse_over is not None and st.st_size > refuse_over:
            raise ToolError(f"{target.rel!r} is too large for edit_file ({human_size(st.st_size)}; limit "
                            f"{human_size(refuse_over)})")
        digest, size, lines, head = hashlib.sha256(), 0, 0, b""
        kept: list[bytes] | None = []
        try:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                lines += chunk.count(b"\n")
                if len(head) < SNIFF_BYTES:
                    head += chunk[:SNIFF_BYTES - len(head)]
                if kept is not None and size <= keep:
                    kept.append(chunk)
                else:
                    kept = None  # past the limit: keep the fingerprint only
                if refuse_over is not None and size > refuse_over:  # it grew while being read
                    raise ToolError(f"{target.rel!r} is too large for edit_file (over {human_size(refuse_over)})")
        except OSError as exc:
            raise ToolError(f"cannot read {target.rel!r}: {exc.strerror or exc}") from None
    return FileState(size, digest.digest(), lines, head), (b"".join(kept) if kept is not None else None)


def _fingerprint(data: bytes) -> FileState:
    return FileState(len(data), hashlib.sha256(data).digest(), data.count(b"\n"), data[:SNIFF_BYTES])


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"content cannot be encoded as UTF-8 ({exc.reason} at position {exc.start})") from None
