"""One JSONL file per agent session: every message, tool call, approval, tool result and stats line.

Why JSONL, flushed per line: a crash or Ctrl-C leaves a readable file up to the last event.
Location: <data dir>/transcripts/<session id>.jsonl (data dir from localspec.models.paths, which honours
LOCALSPEC_HOME).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from localspec.private_files import open_append


def transcripts_dir() -> Path:
    from localspec.models.paths import get_paths

    return get_paths().data_dir / "transcripts"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Transcript:
    def __init__(self, path: Path | str, *, within: Path | str | None = None):
        """Append to `path` (created 0600 in a private folder, never through a link); `within`: localspec's
        folder above it, tightened too."""
        self.path = Path(path)
        self._file = open_append(self.path, within=within)
        self._lock = threading.Lock()

    @classmethod
    def open(cls, session_id: str | None = None, directory: Path | str | None = None) -> "Transcript":
        folder = Path(directory) if directory is not None else transcripts_dir()
        within = None if directory is not None else folder.parent
        return cls(folder / f"{session_id or new_session_id()}.jsonl", within=within)

    @property
    def session_id(self) -> str:
        return self.path.stem

    def write(self, kind: str, data: dict[str, Any]) -> None:
        line = json.dumps({"ts": round(time.time(), 3), "type": kind, **data}, ensure_ascii=False, default=str)
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> "Transcript":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_transcript(path: Path | str) -> list[dict]:
    """All events of a transcript file, in order (for tests, `--resume`-style tools and debugging)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
