"""Prompt prefixes computed once: the system prompt and tool definitions every chat with the same tools starts with,
kept as llama.cpp sequence states on disk so that a new chat, a restart or another process skips their prefill.

Why: with tools on, a chat's first prompt is mostly tool definitions (1,200 tokens for the built-in tools, 3,400
with two MCP servers): seconds of silent prefill on a CPU before the first token, every time. Within a process the
KV cache already keeps the longest common prefix of consecutive prompts; a saved state brings it back after a
restart, or after a request with other tools replaced it (the server).

Front ends say which prefixes are worth keeping (`Wanted.add`, through SpecEngine.keep_prefix); Context.prefill
restores the longest saved one a prompt starts with and saves a wanted one as its prefill passes the end of it.
Each file holds one prefix's tokens (llama.cpp stores them with the state) and is checked against the prompt on
load. One folder per model file and context layout; the least recently used files go first beyond MAX_FILES.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

MIN_TOKENS = 64  # a prefix shorter than this is prefilled faster than its file is read: not worth a file
MAX_FILES = 24  # per model folder (SmolLM2-135M: ~23 KB per token of prefix, so 1,200 tokens is ~27 MB)
MAX_WANTED = 16  # prefixes remembered per process (a server sees a few tool sets, an app one or two)


@dataclass(frozen=True)
class PrefillInfo:
    """How one prefill got its prompt into the cache."""

    tokens: int = 0  # the prompt
    reused: int = 0  # already in the cache from the previous prompt (the common prefix)
    restored: int = 0  # read from a saved prefix state instead (0 when none was used)
    evaluated: int = 0  # computed now
    seconds: float = 0.0
    saved: int = 0  # length of a prefix saved to disk during this prefill (0: none)

    @property
    def cached(self) -> int:
        """Prompt tokens not computed now: reused from the cache or restored from disk."""
        return self.tokens - self.evaluated


class Wanted:
    """Prefixes worth keeping, most recently asked for first; shared by a pair's target and draft contexts."""

    def __init__(self, limit: int = MAX_WANTED):
        self.limit = limit
        self._items: OrderedDict[tuple[int, ...], None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, tokens: Sequence[int]) -> None:
        key = tuple(tokens)
        if len(key) < MIN_TOKENS:
            return
        with self._lock:
            self._items[key] = None
            self._items.move_to_end(key, last=False)
            while len(self._items) > self.limit:
                self._items.popitem()

    def within(self, tokens: Sequence[int]) -> list[tuple[int, ...]]:
        """The wanted prefixes `tokens` starts with, longest first."""
        with self._lock:
            items = list(self._items)
        n = len(tokens)
        found = [p for p in items if len(p) <= n and tuple(tokens[:len(p)]) == p]
        return sorted(found, key=len, reverse=True)


def tokens_key(tokens: Sequence[int]) -> str:
    return hashlib.sha256(b"".join(int(t).to_bytes(4, "little", signed=True) for t in tokens)).hexdigest()[:24]


def model_key(path: Path, *parts: object) -> str:
    """A folder name for a model file and the context settings its states depend on: the file's identity (a
    re-download or a requantized copy under the same name gets new states) and the library version."""
    st = path.stat()
    ident = "|".join(str(x) for x in (path.resolve(), st.st_size, st.st_mtime_ns, *parts))
    return f"{path.stem[:40]}-{hashlib.sha256(ident.encode()).hexdigest()[:12]}"


class PrefixStore:
    """Where one context's prefix states are saved (`folder`), and which prefixes are wanted."""

    def __init__(self, folder: Path, wanted: Wanted | None = None, *, max_files: int = MAX_FILES):
        self.folder = Path(folder)
        self.wanted = wanted if wanted is not None else Wanted()
        self.max_files = max_files
        self.error: str | None = None  # the last save or load that failed (the chat goes on without it)

    def path(self, tokens: Sequence[int]) -> Path:
        return self.folder / f"{tokens_key(tokens)}.state"

    def saved(self, tokens: Sequence[int]) -> tuple[int, Path] | None:
        """The longest wanted prefix of `tokens` that has a saved state: (its length, its file)."""
        for prefix in self.wanted.within(tokens):
            path = self.path(prefix)
            if path.is_file():
                return len(prefix), path
        return None

    def unsaved(self, tokens: Sequence[int], after: int) -> int | None:
        """The length of the longest wanted prefix of `tokens` longer than `after` with no saved state yet: the
        point where prefill should stop for a moment and save."""
        for prefix in self.wanted.within(tokens):
            if len(prefix) > after and not self.path(prefix).is_file():
                return len(prefix)
        return None

    def writable(self) -> bool:
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            self.error = f"cannot create {self.folder}: {exc.strerror or exc}"
            return False
        return True

    def used(self, path: Path) -> None:
        """Mark a file as recently used (pruning goes by modification time)."""
        try:
            os.utime(path)
        except OSError:
            pass

    def prune(self) -> None:
        try:
            files = sorted(self.folder.glob("*.state"), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return
        for old in files[self.max_files:]:
            try:
                old.unlink()
            except OSError:
                pass
