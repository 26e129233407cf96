"""The vocabulary every danger rater shares: the levels, a Danger, the ratings being collected for one command line,
and `Call`: one simple command as a per-program rater sees it (tools/safety/programs.py holds the table)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from localspec.tools.shell.parse import SimpleCommand

LOW, MEDIUM, HIGH = "low", "medium", "high"
_RANK = {LOW: 0, MEDIUM: 1, HIGH: 2}


@dataclass(frozen=True)
class Danger:
    level: str  # "low" | "medium" | "high"
    reasons: tuple[str, ...] = ()

    @property
    def rank(self) -> int:
        return _RANK[self.level]

    def __str__(self) -> str:
        return self.level + (": " + "; ".join(self.reasons) if self.reasons else "")


class Ratings:
    """The highest level seen and every distinct reason, in order."""

    def __init__(self) -> None:
        self.level = LOW
        self.reasons: list[str] = []

    def add(self, level: str, reason: str) -> None:
        if _RANK[level] > _RANK[self.level]:
            self.level = level
        if reason not in self.reasons:
            self.reasons.append(reason)

    def danger(self) -> Danger:
        return Danger(self.level, tuple(self.reasons))


@dataclass
class Call:
    """One simple command being rated: its program and arguments read the usual way (flags, the letters of short
    flags, positional words), the workspace, where ratings go, and how to rate commands it runs in turn."""
    cmd: SimpleCommand
    root: str
    ratings: Ratings
    depth: int
    # Rate a command line this one runs (`sh -c TEXT`, `script -c TEXT`); a list: an argv (`find -exec ...`).
    nested: Callable[[str | list[str]], None] = field(repr=False, default=lambda _: None)

    @property
    def prog(self) -> str:
        return self.cmd.program

    @property
    def args(self) -> list[str]:
        return self.cmd.args

    @property
    def flags(self) -> list[str]:
        return [a for a in self.args if a.startswith("-")]

    @property
    def short(self) -> str:
        """The letters of every short-flag word together (`-rf -v` -> "rfv")."""
        return "".join(a[1:] for a in self.flags if not a.startswith("--"))

    @property
    def positional(self) -> list[str]:
        return [a for a in self.args if not a.startswith("-")]

    def add(self, level: str, reason: str) -> None:
        self.ratings.add(level, reason)


def long_given(flags: list[str], name: str) -> bool:
    """Whether a long option is given, also abbreviated (GNU and git accept "rm --recu", "git reset --har")."""
    for flag in flags:
        given = flag.split("=", 1)[0]
        if given.startswith("--") and len(given) >= 4 and name.startswith(given):
            return True
    return False
