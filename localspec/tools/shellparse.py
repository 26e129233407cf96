"""A conservative split of a shell command line into simple commands.

Why not a real shell parser: danger rating and "allow always" patterns only need program names,
arguments, redirections and pipes. When in doubt this over-reports (quoted operators count as
operators, comments as words), which errs on the side of asking the user.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

_PUNCT = set("();<>|&")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
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
            _split_wrappers(current)
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


def _split_wrappers(cmd: SimpleCommand) -> None:
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
