"""The conversation as the user saw it (messages, tool calls, errors), rendered as a Markdown file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass
class Entry:
    kind: str  # "user" | "assistant" | "tool" | "error" | "note"
    text: str
    title: str = ""  # tool name for "tool" entries
    detail: str = ""  # tool arguments (JSON) for "tool" entries


def to_markdown(entries: list[Entry], *, pair: str | None = None, when: datetime | None = None) -> str:
    when = when or datetime.now()
    out = [f"# localspec transcript, {when:%Y-%m-%d %H:%M}", ""]
    if pair:
        out += [f"Model pair: {pair}", ""]
    for e in entries:
        if e.kind == "user":
            out += ["## You", "", e.text, ""]
        elif e.kind == "assistant":
            out += ["## Assistant", "", e.text, ""]
        elif e.kind == "tool":
            out += [f"### Tool call: {e.title}", "", "```json", e.detail, "```", "", "```", e.text, "```", ""]
        else:
            out += [f"> {e.kind}: {e.text}", ""]
    return "\n".join(out).rstrip() + "\n"


def save(entries: list[Entry], folder: Path, *, pair: str | None = None, when: datetime | None = None) -> Path:
    """Write a new transcript file in `folder` (never overwriting an older one) and return its path."""
    when = when or datetime.now()
    folder.mkdir(parents=True, exist_ok=True)
    base = f"localspec-transcript-{when:%Y%m%d-%H%M%S}"
    path, n = folder / f"{base}.md", 1
    while path.exists():
        n += 1
        path = folder / f"{base}-{n}.md"
    path.write_text(to_markdown(entries, pair=pair, when=when), encoding="utf-8")
    return path


def arguments_json(arguments) -> str:
    return json.dumps(arguments, ensure_ascii=False, indent=2)
