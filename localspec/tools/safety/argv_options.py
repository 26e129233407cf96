"""How a command's words read as options: one reading for the danger ratings and the "allow always" rules.

Why one module: GNU getopt and git accept the same option in several spellings, and a rule that checks one of
them misses the others (`cp --target-directory=/root/.ssh` was rated high while `cp -t/root/.ssh` was low, and
`make -C /etc` was refused where `make -C/etc` was remembered). The spellings read alike here:

    -t DIR   -tDIR   -abt DIR (a cluster ending in a letter that takes a value)
    --target-directory DIR   --target-directory=DIR   --target DIR   --target=DIR (a unique abbreviation)

For a program whose options are known (a Syntax), read() splits them exactly as getopt would. For any other
program, embedded_paths() names every piece of a word that the program might read as a path; that over-reports
(`-Isrc/x` may be -I with src/x, or four letters and /x), which is the safe side for a rating or an allowance.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

MIN_ABBREVIATION = 4  # "--ta": getopt accepts shorter ones, but two letters rarely name one option uniquely


@dataclass(frozen=True)
class Syntax:
    """What getopt needs to know about a program: which short letters and long names take a value.

    With `short_flags` given, the program's options are all known: a letter or long name outside the Syntax is an
    unknown spelling (Reading.unknown), which a danger rater treats as one it cannot vouch for."""
    short_values: str = ""  # -tDIR, -t DIR
    long_values: frozenset[str] = frozenset()  # --name=VALUE, --name VALUE
    long_flags: frozenset[str] = frozenset()  # long options without a value (they make abbreviations ambiguous)
    short_flags: str | None = None  # letters without a value; None: any other letter is one
    short_optional: str = ""  # letters whose value is only attached (sed -i.bak, gawk -pFILE)
    long_optional: frozenset[str] = frozenset()  # long names whose value is only after '=' (--in-place=.bak)


@dataclass
class Reading:
    options: list[tuple[str, str | None]] = field(default_factory=list)  # (name, value); flags have None
    positionals: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # words with an option a complete Syntax does not know

    def values(self, *names: str) -> list[str]:
        """The values given to any of these options, in every spelling."""
        return [v for n, v in self.options if n in names and v is not None]

    def given(self, *names: str) -> bool:
        return any(n in names for n, _ in self.options)


def long_name(given: str, names: Iterable[str]) -> str:
    """The long option a word names: the name itself, or the one known name it abbreviates; else the word."""
    names = set(names)
    if given in names or len(given) < MIN_ABBREVIATION:
        return given
    matches = [n for n in names if n.startswith(given)]
    return matches[0] if len(matches) == 1 else given


def read(args: Iterable[str], syntax: Syntax) -> Reading:
    """The options and positional words of an argument list, as GNU getopt (permuting) reads them."""
    out = Reading()
    words = list(args)
    known = syntax.long_values | syntax.long_flags | syntax.long_optional
    strict = syntax.short_flags is not None
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            out.positionals += words[i:]
            break
        if word.startswith("--"):
            given, eq, value = word.partition("=")
            name = long_name(given, known)
            if strict and name not in known:
                out.unknown.append(word)
                continue
            if name in syntax.long_values and not eq and i < len(words):
                value, eq = words[i], "="
                i += 1
            out.options.append((name, value if eq else None))
            continue
        if word.startswith("-") and len(word) > 1:
            for k in range(1, len(word)):
                letter = word[k]
                if letter in syntax.short_values or letter in syntax.short_optional:
                    value = word[k + 1:]
                    if not value and letter in syntax.short_values and i < len(words):
                        value = words[i]
                        i += 1
                    out.options.append(("-" + letter, value or None))
                    break
                if strict and letter not in (syntax.short_flags or ""):
                    out.unknown.append(word)
                    break
                out.options.append(("-" + letter, None))
            continue
        out.positionals.append(word)
    return out


def embedded_paths(word: str, *, short_tails: bool = True) -> list[str]:
    """Every piece of one word that a program whose options are unknown might read as a path.

    The word itself; the value after '=' (`--out=/etc/x`, `of=/dev/sda`); for a short-option word, the tail
    after its first letter (`-t/root/.ssh` -> `/root/.ssh`) and, after a cluster of letters, a tail that starts
    like a path (`-xzf/root/a.tar` -> `/root/a.tar`). A long option's value in the next word is a word of its
    own. At most a handful of pieces per word, however long it is. short_tails=False: only the word and its
    '=' value (for a word already read by read(), whose short options are split exactly).
    """
    found = [word]
    if "=" in word:
        found.append(word.split("=", 1)[1])
    if short_tails and word.startswith("-") and not word.startswith("--"):
        k = 1
        while k < len(word) - 1 and word[k].isalnum():
            tail = word[k + 1:]
            if k == 1 or tail[0] in "/~.$":  # the first letter's value, or a path right after a cluster
                found.append(tail)
            k += 1
    return found
