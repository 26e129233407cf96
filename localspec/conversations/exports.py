"""A stored conversation as a Markdown or JSON file, written where the user says (default: <data dir>/exports)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from localspec.conversations.store import Conversation, ConversationError
from localspec.private_files import private_dir, replace_file, write_new

EXPORT_FORMATS = {"md": ".md", "json": ".json"}


class ExportExists(ConversationError):
    """The chosen export file exists (it is never replaced without being asked to)."""


def render(conv: Conversation, fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"format": "localspec-conversation", "version": 1, **conv.to_dict()},
                          ensure_ascii=False, indent=2) + "\n"
    if fmt == "md":
        return to_markdown(conv)
    raise ConversationError(f"unknown export format {fmt!r}: use md or json")


def to_markdown(conv: Conversation) -> str:
    out = [f"# {conv.display_title}", "",
           f"- Conversation: `{conv.id}`",
           f"- Started: {_local(conv.created)} · last message: {_local(conv.updated)}"]
    if conv.pair:
        out.append(f"- Model pair: {conv.pair}")
    if conv.workspace:
        out.append(f"- Workspace: `{conv.workspace}`")
    out.append("")
    if conv.system:
        out += ["## System prompt", "", _quote(conv.system), ""]
    names: dict[str, str] = {}
    for m in conv.messages or []:
        role, content = m.get("role"), m.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        if role == "user":
            out += ["## You", "", content, ""]
        elif role == "assistant":
            reasoning = m.get("reasoning_content")
            if content or reasoning or not m.get("tool_calls"):
                out += ["## Assistant" + (" (cancelled)" if m.get("cancelled") else
                                          " (failed)" if m.get("failed") else ""), ""]
                if m.get("cancelled"):  # stopped by the user: what it had written so far, if anything
                    out += ["*The reply was cancelled" + (": what it had written so far.*" if content else
                                                         " before it wrote anything.*"), ""]
                elif m.get("failed"):
                    out += [f"*The reply failed: {m['failed']}*", ""]
                if reasoning:
                    out += ["<details><summary>Reasoning</summary>", "", str(reasoning), "", "</details>", ""]
                if content:
                    out += [content, ""]
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                name = str(fn.get("name", "?"))
                names[str(call.get("id", ""))] = name
                out += [f"### Tool call: {name}", "", *_fenced(_pretty(fn.get("arguments")), "json"), ""]
        elif role == "tool":
            name = m.get("name") or names.get(str(m.get("tool_call_id", "")), "tool")
            out += [f"### Tool result: {name}", "", *_fenced(content), ""]
        elif role == "system":
            out += ["## System", "", _quote(content), ""]
    return "\n".join(out).rstrip() + "\n"


def default_export_path(conv: Conversation, fmt: str, folder: Path | None = None) -> Path:
    """<folder or data dir/exports>/<title slug>-<id>.<ext>: readable, and unique per conversation."""
    if folder is None:
        from localspec.models.paths import get_paths

        folder = get_paths().data_dir / "exports"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", conv.title).strip("-").lower()[:40].strip("-") or "conversation"
    return folder / f"{slug}-{conv.id}{EXPORT_FORMATS[fmt]}"


def export(conv: Conversation, fmt: str, dest: Path | str | None = None, *, overwrite: bool = False) -> Path:
    """Write the conversation; `dest` is a file, or a folder for the default name. Returns the path written.

    An existing file is never replaced unless `overwrite` (the default name gets a number instead). The file is
    created 0600 with O_CREAT|O_EXCL|O_NOFOLLOW, so nothing is written through a symbolic link at `dest` (a link
    counts as an existing file); `overwrite` replaces it atomically (temporary file + rename): a link there is
    replaced by the file, never followed."""
    if fmt not in EXPORT_FORMATS:
        raise ConversationError(f"unknown export format {fmt!r}: use md or json")
    data = render(conv, fmt).encode("utf-8")
    explicit = dest is not None and str(dest).strip() != ""
    within = None
    if explicit:
        path = Path(str(dest)).expanduser()
        if (path.is_dir() and not path.is_symlink()) or str(dest).endswith(("/", "\\")):
            path, explicit = default_export_path(conv, fmt, path), False
    else:
        path = default_export_path(conv, fmt)
        within = _data_dir()
    try:
        # Folders created here are private; a folder the user chose keeps its permissions.
        private_dir(path.parent, within=within, tighten_existing=within is not None)
        if overwrite:
            replace_file(path, data)
        else:
            path = _write_new(path, data, numbered=not explicit)
    except OSError as exc:
        raise ConversationError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path.resolve()


def _write_new(path: Path, data: bytes, *, numbered: bool) -> Path:
    """Create path (or, numbered, the first free path-2, path-3, ...) without replacing or following anything."""
    base, n = path, 1
    while True:
        try:
            write_new(path, data)
            return path
        except FileExistsError:
            if not numbered:
                what = "is a symbolic link (never written through)" if path.is_symlink() else "already exists"
                raise ExportExists(f"{path} {what}: choose another name") from None
            n += 1
            path = base.with_name(f"{base.stem}-{n}{base.suffix}")


def _data_dir() -> Path:
    from localspec.models.paths import get_paths

    return get_paths().data_dir


def available_path(path: Path) -> Path:
    """`path`, or the first of path-2, path-3, ... that does not exist yet (a suggestion to show: export() itself
    never relies on it, another process may take the name meanwhile)."""
    base, n = path, 1
    while path.exists() or path.is_symlink():
        n += 1
        path = base.with_name(f"{base.stem}-{n}{base.suffix}")
    return path


def _local(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _pretty(arguments) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, ensure_ascii=False, indent=2)


def _fenced(text: str, lang: str = "") -> list[str]:
    # A fence longer than any backtick run inside: a tool result cannot close the block early.
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text, fence]


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines()) or ">"
