"""Read TOML (tomllib, or tomli on Python 3.10) and write the small subset localspec's own files use."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from localspec.private_files import private_dir, replace_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError


def loads(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ("-" if value < 0 else "") + ("nan" if math.isnan(value) else "inf")
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are a subset of TOML basic-string escapes (json.dumps never emits "\/").
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "-_" for c in key) and key.isascii()
    return key if bare else json.dumps(key)


def dumps(data: dict[str, Any], header: str = "") -> str:
    """Top-level scalars first, then one [table] per nested dict (recursively). None values are left out."""
    lines: list[str] = [f"# {line}" if line else "#" for line in header.splitlines()]

    def table(prefix: list[str], body: dict[str, Any]) -> None:
        scalars = {k: v for k, v in body.items() if v is not None and not isinstance(v, dict)}
        tables = {k: v for k, v in body.items() if isinstance(v, dict)}
        if prefix and (scalars or not tables):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_key(p) for p in prefix) + "]")
        for k, v in scalars.items():
            lines.append(f"{_key(k)} = {_scalar(v)}")
        for k, v in tables.items():
            table(prefix + [k], v)

    table([], data)
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file + rename so a crash never leaves half a file behind; the temporary file is
    created O_EXCL|O_NOFOLLOW and a link at `path` is replaced, never written through (private_files). A new
    file (and any folder made for it) is private; an existing file keeps its mode."""
    private_dir(path.parent, tighten_existing=False)
    replace_file(path, text.encode("utf-8"), mode=None)
