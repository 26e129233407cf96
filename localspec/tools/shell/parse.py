"""Two readings of a shell command line: a conservative split into simple commands, and a strict "plain argv" test.

Why two: the danger rating and "deny always" need program names, arguments, redirections and pipes of ANY
command, and over-report when unsure (quoted operators count as operators, comments as words). "Allow always"
needs the opposite guarantee: that a command is exactly a list of literal words, nothing the shell would expand,
redirect or chain. plain_argv() accepts only that strict subset and refuses everything else.
"""
from __future__ import annotations

import os
import re
import shlex
import string
from dataclasses import dataclass, field

_PUNCT = set("();<>|&")
_ASSIGNMENT = ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")
_FD_BEFORE_REDIRECT = re.compile(r"(^|\s)\d+(?=[<>])")

# Prefix commands that run another command; value = their options that take a separate argument.
WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-p", "-r", "-t", "-U", "-h"},
    "doas": {"-u", "-C"},
    "env": {"-u", "-C", "-S"},
    "nohup": set(),
    "time": set(),
    "nice": {"-n"},
    "ionice": {"-c", "-n"},
    "command": set(),
    "exec": set(),
    "builtin": set(),
    "stdbuf": set(),
    "xargs": {"-n", "-I", "-d", "-P", "-L", "-s", "-E", "-a"},
    "timeout": {"-s", "-k"},
    "setsid": set(),
    "busybox": set(),
    "toybox": set(),
    "unbuffer": set(),
    "chronic": set(),
    "caffeinate": set(),
    "flock": {"-w", "-E", "--timeout", "--conflict-exit-code"},
    "watch": {"-n", "-d", "--interval"},
    "strace": {"-o", "-e", "-p", "-s", "-u"},
    "ltrace": {"-o", "-e", "-p", "-s", "-u"},
    "firejail": set(),
    "torsocks": set(),
    "proxychains": set(),
    "proxychains4": set(),
    "parallel": {"-j", "-S", "--jobs", "-a"},
    "unshare": set(),
    "nsenter": {"-t", "--target"},
    "systemd-run": {"-p", "--property", "-E", "--setenv", "-u", "--unit", "-M", "-H", "--uid", "--gid",
                    "--nice", "--description", "--slice", "--on-active", "--on-calendar"},
}
# Programs whose first positional argument is a subcommand worth remembering separately.
SUBCOMMAND_PROGRAMS = {
    "git", "npm", "pnpm", "yarn", "pip", "pip3", "uv", "cargo", "go", "docker", "podman", "kubectl",
    "apt", "apt-get", "brew", "poetry", "conda", "make", "systemctl", "gh", "dotnet", "mvn", "gradle",
    "hatch", "pdm", "bun", "deno", "rustup", "helm", "terraform",
}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "csh", "tcsh"}
# Shell keywords that may precede a command ("if rm x; then ...") or stand alone ("done").
_LEADING_KEYWORDS = {"{", "!", "if", "then", "else", "elif", "while", "until", "do"}
_STRUCTURAL = {"}", "fi", "done", "esac", "for", "case", "select", "function", "in"}


@dataclass
class SimpleCommand:
    words: list[str]
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)
    piped: bool = False  # stdin comes from the previous command through "|"
    wrappers: list[str] = field(default_factory=list)  # sudo, env, xargs ... in front of the program
    argv: list[str] = field(default_factory=list)  # the program and its arguments

    @property
    def program(self) -> str:
        return os.path.basename(self.argv[0].strip("`")) if self.argv else ""

    @property
    def args(self) -> list[str]:
        return self.argv[1:]


@dataclass
class ParsedCommand:
    commands: list[SimpleCommand]
    substitution: bool  # $(...), backticks or <(...): commands we cannot see
    error: str | None = None


def parse(command: str) -> ParsedCommand:
    text = _FD_BEFORE_REDIRECT.sub(r"\1", command.replace("\n", " ; "))
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # a "#" must not hide the rest of the line from the rater
    error = None
    try:
        tokens = list(lexer)
    except ValueError as exc:  # unbalanced quotes
        error = str(exc)
        tokens = text.split()
    commands: list[SimpleCommand] = []
    current = SimpleCommand(words=[])
    pending: str | None = None

    def flush(piped_next: bool) -> SimpleCommand:
        if current.words or current.redirects:
            split_wrappers(current)
            commands.append(current)
        return SimpleCommand(words=[], piped=piped_next)

    for tok in tokens:
        if tok and all(c in _PUNCT for c in tok):
            if "<" in tok or ">" in tok:
                pending = tok
            else:
                current = flush(piped_next=tok in ("|", "|&"))
            continue
        if pending is not None:
            current.redirects.append((pending, tok))
            pending = None
            continue
        current.words.append(tok)
    flush(False)
    return ParsedCommand(commands, bool(_SUBSTITUTION.search(command)), error)


def split_wrappers(cmd: SimpleCommand) -> None:
    """Fill cmd.wrappers and cmd.argv from cmd.words (assignments, sudo/env/xargs/... in front of the program)."""
    words = list(cmd.words)
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word) or word in _LEADING_KEYWORDS:
            i += 1
            continue
        if word in _STRUCTURAL:
            i = len(words)  # "for x in ...", "done": no program of its own
            break
        name = os.path.basename(word)
        if name not in WRAPPERS:
            break
        cmd.wrappers.append(name)
        i += 1
        takes_value = WRAPPERS[name]
        while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])):
            i += 2 if words[i] in takes_value else 1
        if name == "timeout" and i < len(words):
            i += 1  # the duration
    cmd.argv = words[i:]


def command_patterns(command: str) -> tuple[str, ...]:
    """What "allow always"/"deny always" remembers for a shell command.

    One pattern per simple command, e.g. "git push", "ls", "python -m pytest". Commands whose
    real content we cannot see (substitution, sh -c, eval) are remembered only as the exact text.
    """
    parsed = parse(command)
    if parsed.error or parsed.substitution:
        return (command.strip(),)
    patterns: list[str] = []
    for cmd in parsed.commands:
        pattern = _pattern(cmd)
        if pattern is None:
            return (command.strip(),)
        if pattern and pattern not in patterns:
            patterns.append(pattern)
    return tuple(patterns) or (command.strip(),)


def _pattern(cmd: SimpleCommand) -> str | None:
    prog = cmd.program
    if not prog:
        return ""  # redirection-only or structural piece: nothing to remember
    if prog in ("eval", "source", ".") or (prog in SHELLS and "-c" in cmd.args):
        return None
    prefix = " ".join(w for w in cmd.wrappers if w in ("sudo", "doas"))
    head = prog
    positional = [a for a in cmd.args if not a.startswith("-")]
    if prog in SUBCOMMAND_PROGRAMS and positional:
        head = f"{prog} {positional[0]}"
    elif prog.startswith("python") and len(cmd.args) >= 2 and cmd.args[0] == "-m":
        head = f"{prog} -m {cmd.args[1]}"
    return f"{prefix} {head}".strip()


# --- the strict reading: is this exactly one plain argv? -------------------------------------------------------

# Characters that mean nothing to /bin/sh outside quotes (no expansion, globbing, operators, comments, escapes).
_PLAIN_UNQUOTED = frozenset(string.ascii_letters + string.digits + "_./:,+=@%^-")
_WHY_NOT_PLAIN = [
    ("\n\r", "spans several lines"),
    (";&|", "chains several commands"),
    ("<>", "redirects input or output"),
    ("$", "expands variables or substitutes commands"),
    ("`", "substitutes commands"),
    ("*?[]", "has wildcards the shell expands"),
    ("{}", "has braces the shell may expand or group"),
    ("()", "runs a subshell or function"),
    ("~", "expands ~"),
    ("#", "has a comment"),
    ("\\", "uses backslash escapes"),
    ("!", "has '!'"),
]


@dataclass(frozen=True)
class PlainCommand:
    """argv when a command line is one plain simple command, else None with the reason in words."""
    argv: tuple[str, ...] | None
    reason: str = ""


def plain_argv(command: str) -> PlainCommand:
    """The argv of a command made only of literal words (bare safe characters, '...' or "..." without $ ` \\).

    Anything the shell would interpret (assignments, redirections, substitutions, chaining, globs, tilde,
    escapes, comments, control or invisible characters) makes it not plain: the caller must then ask.
    """
    words: list[str] = []
    current: list[str] | None = None
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c in " \t":
            if current is not None:
                words.append("".join(current))
                current = None
            i += 1
            continue
        if c in "'\"":
            end = command.find(c, i + 1)
            if end < 0:
                return PlainCommand(None, "has an unbalanced quote")
            inner = command[i + 1:end]
            if c == '"' and any(ch in inner for ch in "$`\\"):
                return PlainCommand(None, "expands variables, commands or escapes inside double quotes")
            if not all(ch == " " or ch.isprintable() for ch in inner):
                return PlainCommand(None, "has control or invisible characters")
            if current is None:  # appended in place: a long word must cost linear time, not quadratic
                current = []
            current.append(inner)
            i = end + 1
            continue
        if c not in _PLAIN_UNQUOTED:
            return PlainCommand(None, _why_not(c))
        if current is None:
            current = []
        current.append(c)
        i += 1
    if current is not None:
        words.append("".join(current))
    if not words:
        return PlainCommand(None, "is empty")
    if "=" in words[0]:
        return PlainCommand(None, "sets environment variables")
    try:  # a second, independent tokenizer must agree, or we do not trust our reading
        agree = shlex.split(command, comments=False, posix=True) == words
    except ValueError:
        agree = False
    if not agree:
        return PlainCommand(None, "could not be read unambiguously")
    return PlainCommand(tuple(words))


def _why_not(c: str) -> str:
    for chars, reason in _WHY_NOT_PLAIN:
        if c in chars:
            return reason
    if not c.isprintable():
        return "has control or invisible characters"
    return f"has the character {c!r} outside quotes"
