"""Policy: which tool kinds may run without asking, plus the user's remembered decisions.

Modes: "ask" (default; reads run, writes and shell need approval), "read-only" (writes and shell
refused), "auto" (everything runs; an explicit opt-in). Remembered "always" decisions are kept per
tool for the lifetime of the Policy object (one session): "deny always" by pattern (a program name
denies every command running it), "allow always" by one exact key (tools/safety/allowance.py for shell).
"""
from __future__ import annotations

import threading
from typing import Hashable, Iterable

from localspec.tools.safety.approvals import Decision

MODES = ("ask", "read-only", "auto")


def normalize_mode(mode: str) -> str:
    key = str(mode).strip().lower().replace("_", "-")
    if key == "readonly":
        key = "read-only"
    if key not in MODES:
        raise ValueError(f"invalid policy mode {mode!r} (expected one of: {', '.join(MODES)})")
    return key


class Policy:
    def __init__(self, mode: str = "ask") -> None:
        self._mode = normalize_mode(mode)
        self._allowed: dict[str, set[Hashable]] = {}  # str patterns, or allowance.Allowance for shell
        self._denied: dict[str, set[str]] = {}
        self._lock = threading.Lock()  # the approver may run on a UI thread

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._mode = normalize_mode(value)

    def refuses(self, kind: str) -> bool:
        """kind is "read", "write" or "shell"."""
        return self._mode == "read-only" and kind != "read"

    def needs_approval(self, kind: str) -> bool:
        return self._mode == "ask" and kind != "read"

    def remember(self, tool: str, patterns: Iterable[str], decision: Decision) -> None:
        if not decision.remembered:
            return
        with self._lock:
            target = self._allowed if decision.allowed else self._denied
            other = self._denied if decision.allowed else self._allowed
            for pattern in patterns:
                target.setdefault(tool, set()).add(pattern)
                other.get(tool, set()).discard(pattern)

    def allow_always(self, tool: str, key: Hashable) -> None:
        """Remember one "allow always" key (a shell Allowance, a write's path)."""
        with self._lock:
            self._allowed.setdefault(tool, set()).add(key)

    def allows(self, tool: str, key: Hashable | None) -> bool:
        """Whether "allow always" was given for exactly this key."""
        if key is None:
            return False
        with self._lock:
            return key in self._allowed.get(tool, set())

    def recall(self, tool: str, patterns: Iterable[str]) -> Decision | None:
        """DENY_ALWAYS if any pattern was denied; ALLOW_ALWAYS if every pattern was allowed; else None."""
        patterns = tuple(patterns)
        if not patterns:
            return None
        with self._lock:
            denied = self._denied.get(tool, set())
            allowed = self._allowed.get(tool, set())
            if any(p in denied for p in patterns):
                return Decision.DENY_ALWAYS
            if all(p in allowed for p in patterns):
                return Decision.ALLOW_ALWAYS
        return None

    def remembered(self) -> dict[str, dict[str, list[str]]]:
        """Snapshot for UIs: {"allow": {tool: [patterns]}, "deny": {...}}."""
        with self._lock:
            return {
                "allow": {t: sorted(map(str, p)) for t, p in self._allowed.items() if p},
                "deny": {t: sorted(p) for t, p in self._denied.items() if p},
            }

    def forget(self) -> None:
        with self._lock:
            self._allowed.clear()
            self._denied.clear()

    def __repr__(self) -> str:
        return f"Policy(mode={self._mode!r})"
