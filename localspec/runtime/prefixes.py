"""Prompt prefixes computed once: the system prompt and tool definitions every chat with the same tools starts with,
kept as llama.cpp sequence states on disk so that a new chat, a restart or another process skips their prefill.

Why: with tools on, a chat's first prompt is mostly tool definitions (1,200 tokens for the built-in tools, 3,400
with two MCP servers): seconds of silent prefill on a CPU before the first token, every time. Within a process the
KV cache already keeps the longest common prefix of consecutive prompts; a saved state brings it back after a
restart, or after a request with other tools replaced it (the server).

Front ends say which prefixes are worth keeping (`Wanted.add`, through SpecEngine.keep_prefix); Context.prefill
restores the longest saved one a prompt starts with and saves a wanted one as its prefill passes the end of it.
Each file holds one prefix's tokens, the model's identity and a MAC, and is checked whole before llama.cpp reads it
(runtime/state_files.py: a damaged, foreign or planted file is refused in one line and computed again). One
private folder per model file and context layout; the least recently used files go first beyond MAX_FILES or
MAX_FOLDER_BYTES.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from localspec.runtime.state_files import Refused, file_size, load_key, private_folder, read_state, write_state

MIN_TOKENS = 64  # a prefix shorter than this is prefilled faster than its file is read: not worth a file
MAX_FILES = 24  # per model folder (SmolLM2-135M: ~23 KB per token of prefix, so 1,200 tokens is ~27 MB)
# Bytes per model folder. Why a bound besides the count: a state is up to the context's size (an 8B model's 8k
# tokens of f16 cache are 1 GiB), and 24 of them were tens of GB. Beyond it the oldest go; a bigger state is not
# saved at all.
MAX_FOLDER_BYTES = 2 << 30
STALE_TMP_S = 3600.0  # a temporary file older than this was left by a process that died while writing
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
    """Where one context's prefix states are saved (`folder`, one per model file and context layout: its name is
    the model's identity in every file), and which prefixes are wanted. Files are written and checked by
    runtime/state_files.py; the folders from `top` down are private (0700, ours). A file that is refused is
    removed, said in one line through `report`, and computed again; a store whose folder is not ours is not used
    at all (said once)."""

    def __init__(self, folder: Path, wanted: Wanted | None = None, *, max_files: int = MAX_FILES,
                 max_bytes: int = MAX_FOLDER_BYTES, top: Path | None = None,
                 report: Callable[[str], None] | None = None):
        self.folder = Path(folder)
        self.wanted = wanted if wanted is not None else Wanted()
        self.max_files = max_files
        self.max_bytes = max_bytes  # what the folder's states may take together: the oldest go beyond it
        self.top = Path(top) if top is not None else self.folder.parent  # made private from here down (the key is
        # in the folder above the model folders)
        self.report = report or _stderr
        self.error: str | None = None  # the last save or load that failed (the chat goes on without it)
        self._key: bytes | None = None
        self._broken = False  # the folder is not ours: nothing is read or written

    @property
    def model(self) -> str:
        return self.folder.name

    def path(self, tokens: Sequence[int]) -> Path:
        return self.folder / f"{tokens_key(tokens)}.state"

    def saved(self, tokens: Sequence[int]) -> tuple[int, Path] | None:
        """The longest wanted prefix of `tokens` that has a saved state: (its length, its file)."""
        if self._broken:
            return None
        for prefix in self.wanted.within(tokens):
            path = self.path(prefix)
            if os.path.lexists(path):
                return len(prefix), path
        return None

    def unsaved(self, tokens: Sequence[int], after: int) -> int | None:
        """The length of the longest wanted prefix of `tokens` longer than `after` with no saved state yet: the
        point where prefill should stop for a moment and save."""
        if self._broken:
            return None
        for prefix in self.wanted.within(tokens):
            if len(prefix) > after and not os.path.lexists(self.path(prefix)):
                return len(prefix)
        return None

    def _ready(self) -> bytes | None:
        """The MAC key, once the folders are private; None (said once) when they cannot be."""
        if self._key is None and not self._broken:
            try:
                private_folder(self.folder, self.top)
                self._key = load_key(self.folder.parent)  # one key for every model folder
            except Refused as exc:
                self._broken = True
                self._say(str(exc))
        return self._key

    def writable(self) -> bool:
        return self._ready() is not None

    def room_for(self, tokens: int, payload_bytes: int) -> bool:
        """Whether a state of this size may be saved at all (the folder's bound); noted when not."""
        size = file_size(self.model, tokens, payload_bytes)
        if size > self.max_bytes:
            self.error = (f"a prompt prefix state of {size:,} bytes is more than the {self.max_bytes:,} a prefix "
                          "folder may hold: not saved")
            return False
        return True

    def write(self, path: Path, tokens: Sequence[int], payload) -> bool:
        """Save a state (llama.cpp's bytes) for `tokens` at `path`, then prune; a failure is noted, never raised."""
        key = self._ready()
        if key is None:
            return False
        try:
            write_state(path, key, self.model, tokens, payload)
        except OSError as exc:
            self.error = f"cannot save a prompt prefix to {path}: {exc.strerror or exc}"
            return False
        self.prune()
        return True

    def read(self, path: Path, expected: Sequence[int]) -> bytearray | None:
        """The checked payload of `path` for exactly `expected`; None when it is refused (then it is removed,
        said in one line, and the prefix is computed again)."""
        key = self._ready()
        if key is None:
            return None
        try:
            return read_state(path, key, self.model, expected, self.max_bytes)
        except Refused as exc:
            self.refuse(path, str(exc))
            return None

    def refuse(self, path: Path, why: str) -> None:
        try:
            os.unlink(path)
        except OSError:
            pass
        self._say(f"saved prompt prefix {path} not used: {why}; computed again")

    def _say(self, line: str) -> None:
        self.error = line
        self.report(f"localspec: {line}")

    def used(self, path: Path) -> None:
        """Mark a file as recently used (pruning goes by modification time)."""
        try:
            os.utime(path, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass

    def prune(self) -> None:
        """Keep the newest files within max_files and max_bytes; temporary files a killed process left go too."""
        try:
            entries = [(p, p.lstat()) for p in self.folder.iterdir()]
        except OSError:
            return
        states = sorted(((p, st) for p, st in entries if p.suffix == ".state"), key=lambda e: e[1].st_mtime,
                        reverse=True)
        total, kept = 0, 0
        for path, st in states:
            total += st.st_size
            kept += 1
            if kept > self.max_files or total > self.max_bytes:
                _unlink(path)
        now = time.time()
        for path, st in entries:  # a write in progress is seconds old; one a crash left behind is not
            if path.name.endswith(".tmp") and now - st.st_mtime > STALE_TMP_S:
                _unlink(path)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):
        pass
