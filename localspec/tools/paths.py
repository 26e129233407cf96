"""Confinement: every path a tool touches must resolve inside the workspace.

Why realpath and then a containment check: it resolves symlinks and ".." together, so a link
inside the workspace that points outside is caught, and so is a new file under such a link.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .result import ToolError


@dataclass(frozen=True)
class Resolved:
    real: Path  # absolute, symlinks resolved
    rel: str  # workspace-relative, posix style ("." for the root), for messages


class Workspace:
    def __init__(self, root: Path | str) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise ValueError(f"workspace {os.fspath(root)!r} is not an existing directory")
        self.root = Path(real)

    def contains(self, real: str | Path) -> bool:
        real = os.fspath(real)
        root = os.fspath(self.root)
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def rel(self, real: str | Path) -> str:
        rel = os.path.relpath(os.fspath(real), self.root)
        return Path(rel).as_posix()

    def resolve(self, raw: str) -> Resolved:
        """Resolve a user/model-supplied path; raise ToolError if it is outside the workspace."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("path is empty")
        if "\x00" in raw:
            raise ToolError("path contains a NUL byte")
        if raw.startswith("~"):
            raise ToolError(f"path {raw!r} refers to a home directory outside the workspace; "
                            "use a workspace-relative path")
        joined = raw if os.path.isabs(raw) else os.path.join(self.root, raw)
        real = os.path.realpath(joined)
        if not self.contains(real):
            lexical = os.path.normpath(joined)
            if self.contains(lexical):
                raise ToolError(f"path {raw!r} goes through a symlink that points outside the workspace")
            raise ToolError(f"path {raw!r} is outside the workspace; use a path inside {self.root}")
        # A new file's parent must be inside too (realpath already resolved it; this guards races/oddities).
        parent = os.path.realpath(os.path.dirname(real))
        if real != os.fspath(self.root) and not self.contains(parent):
            raise ToolError(f"path {raw!r} has a parent directory outside the workspace")
        return Resolved(real=Path(real), rel=self.rel(real))
