"""The approval handshake between the Toolbox and whoever asks the user (TUI, CLI, tests)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Union

from localspec.tools.safety.danger import Danger


class Decision(str, Enum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    DENY_ONCE = "deny_once"
    DENY_ALWAYS = "deny_always"

    @property
    def allowed(self) -> bool:
        return self in (Decision.ALLOW_ONCE, Decision.ALLOW_ALWAYS)

    @property
    def remembered(self) -> bool:
        return self in (Decision.ALLOW_ALWAYS, Decision.DENY_ALWAYS)

    @classmethod
    def coerce(cls, value: Any) -> "Decision":
        """Accept what an approver may return: bool, None (deny), Decision, or a name like 'allow always'."""
        if isinstance(value, Decision):
            return value
        if value is None:
            return cls.DENY_ONCE
        if isinstance(value, bool):
            return cls.ALLOW_ONCE if value else cls.DENY_ONCE
        if isinstance(value, str):
            key = value.strip().lower().replace("-", "_").replace(" ", "_")
            aliases = {"allow": "allow_once", "yes": "allow_once", "deny": "deny_once", "no": "deny_once",
                       "always": "allow_always", "never": "deny_always"}
            key = aliases.get(key, key)
            for member in cls:
                if member.value == key:
                    return member
        raise ValueError(f"approver returned an unrecognised decision {value!r}")


@dataclass
class ApprovalRequest:
    tool: str
    arguments: dict[str, Any]
    cwd: Path
    danger: Danger
    summary: str  # one line for humans, e.g. "run: rm -rf build" or "overwrite src/x.py (+3 -1)"
    diff: str | None = None  # unified diff for writes, computed before anything is written
    # What "deny always" remembers (shell: program patterns like "git push"; writes: the path).
    patterns: tuple[str, ...] = field(default_factory=tuple)
    # What "allow always" remembers, in words; None when it is not offered (then allowing applies once only).
    always: str | None = None
    always_note: str = ""  # why "allow always" is not offered


Approver = Callable[[ApprovalRequest], Union[bool, Decision, str, None]]


class NotAsked(Exception):
    """Raised by an approver that could ask nobody (no terminal on stdin, its input ended): the call does not run,
    and the model is told why instead of that the user said no. The message says why, e.g. "there is no terminal
    to ask on"."""
