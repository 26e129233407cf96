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

@dataclass(frozen=True)
class Wrapper:
    """A prefix command that runs another command: where that command starts in its arguments.

    values: its options that take words of their own, and how many (`-u USER`: 1; bwrap's `--bind SRC DEST`: 2);
    flags: its other options, where they are all known: any other option is then a spelling this reading does not
    know, and the command is marked unread (the danger rating says so, high) instead of guessed at; None: any
    other option is a flag. positionals: words before the command (timeout's duration, taskset's mask, flock's
    file). no_command: options after which there is no command (taskset -p PID). command_option: an option whose
    value is a shell command line (flock FILE -c 'CMD'), read as `sh -c CMD`."""
    values: dict[str, int] = field(default_factory=dict)
    flags: frozenset[str] | None = None
    positionals: int = 0
    no_command: frozenset[str] = frozenset()
    command_option: str = ""


def _w(*values: str, **kw) -> Wrapper:
    return Wrapper({v: 1 for v in values}, **kw)


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


_BWRAP_ONE = ("--args", "--argv0", "--userns", "--userns2", "--pidns", "--uid", "--gid", "--hostname", "--chdir",
              "--unsetenv", "--lock-file", "--sync-fd", "--remount-ro", "--exec-label", "--file-label", "--proc",
              "--dev", "--tmpfs", "--mqueue", "--dir", "--seccomp", "--add-seccomp-fd", "--block-fd",
              "--userns-block-fd", "--info-fd", "--json-status-fd", "--cap-add", "--cap-drop", "--perms", "--size")
_BWRAP_TWO = ("--setenv", "--bind", "--bind-try", "--dev-bind", "--dev-bind-try", "--ro-bind", "--ro-bind-try",
              "--bind-fd", "--ro-bind-fd", "--file", "--bind-data", "--ro-bind-data", "--symlink", "--chmod",
              "--overlay-src")
# Prefix commands that run another command (the rating looks at that command; "allow always" never covers them).
WRAPPERS: dict[str, Wrapper] = {
    "sudo": _w("-u", "-g", "-C", "-D", "-p", "-r", "-t", "-U", "-h"),
    "doas": _w("-u", "-C"),
    "pkexec": _w("--user", flags=_fs("--disable-internal-agent", "--keep-cwd", "--version", "--help")),
    "env": _w("-u", "-C", "-S"),
    "nohup": _w(),
    "time": _w(),
    "nice": _w("-n"),
    "ionice": _w("-c", "-n"),
    "command": _w(),
    "exec": _w(),
    "builtin": _w(),
    "stdbuf": _w(),
    "xargs": _w("-n", "-I", "-d", "-P", "-L", "-s", "-E", "-a"),
    "timeout": _w("-s", "-k", positionals=1),
    "setsid": _w(),
    "busybox": _w(),
    "toybox": _w(),
    "unbuffer": _w(),
    "chronic": _w(),
    "caffeinate": _w(),
    "flock": _w("-w", "-E", "--timeout", "--conflict-exit-code", positionals=1, command_option="-c",
                flags=_fs("-s", "--shared", "-x", "-e", "--exclusive", "-u", "--unlock", "-n", "--nb", "--nonblock",
                          "--no-fork", "-o", "--close", "-F", "--verbose", "--help", "--version")),
    "watch": _w("-n", "-d", "--interval"),
    "strace": _w("-o", "-e", "-p", "-s", "-u"),
    "ltrace": _w("-o", "-e", "-p", "-s", "-u"),
    "firejail": _w(),
    "torsocks": _w(),
    "proxychains": _w(),
    "proxychains4": _w(),
    "parallel": _w("-j", "-S", "--jobs", "-a"),
    "unshare": _w(),
    "nsenter": _w("-t", "--target"),
    "systemd-run": _w("-p", "--property", "-E", "--setenv", "-u", "--unit", "-M", "-H", "--uid", "--gid",
                      "--nice", "--description", "--slice", "--on-active", "--on-calendar"),
    "taskset": _w(positionals=1, flags=_fs("-a", "--all-tasks", "-c", "--cpu-list", "-p", "--pid", "-h", "--help",
                                            "-V", "--version"), no_command=_fs("-p", "--pid")),
    "chrt": _w("-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline", positionals=1,
               flags=_fs("-a", "--all-tasks", "-b", "--batch", "-d", "--deadline", "-f", "--fifo", "-i", "--idle",
                         "-o", "--other", "-r", "--rr", "-R", "--reset-on-fork", "-e", "--ext", "-m", "--max",
                         "-p", "--pid", "-v", "--verbose", "-h", "--help", "-V", "--version"),
               no_command=_fs("-p", "--pid", "-m", "--max")),
    "chroot": _w("--userspec", "--groups", positionals=1, flags=_fs("--skip-chdir", "--help", "--version")),
    "fakeroot": _w("-l", "--lib", "--faked", "-s", "-i",
                   flags=_fs("-u", "--unknown-is-real", "-b", "--fd-base", "-h", "--help", "-v", "--version")),
    "numactl": _w("-C", "--physcpubind", "-N", "--cpunodebind", "-m", "--membind", "-p", "--preferred", "-i",
                  "--interleave", "-w", "--weighted-interleave", "-P", "--preferred-many",
                  flags=_fs("-a", "--all", "-b", "--balancing", "-l", "--localalloc", "-s", "--show", "-H",
                            "--hardware", "--huge", "--touch", "--strict", "--offset", "--length", "--shm",
                            "--file", "--version", "--help"), no_command=_fs("-s", "--show", "-H", "--hardware")),
    "bwrap": Wrapper({**{o: 1 for o in _BWRAP_ONE}, **{o: 2 for o in _BWRAP_TWO}},
                     flags=_fs("--unshare-all", "--share-net", "--unshare-user", "--unshare-user-try",
                               "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup",
                               "--unshare-cgroup-try", "--disable-userns", "--assert-userns-disabled",
                               "--clearenv", "--new-session", "--die-with-parent", "--as-pid-1", "--level-prefix",
                               "--help", "--version")),
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
    unread: str = ""  # a wrapper's option this reading does not know ("bwrap --new-opt"): no program was found

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
    """Fill cmd.wrappers and cmd.argv from cmd.words (assignments, sudo/env/xargs/... in front of the program).
    A wrapper with an option this reading does not know leaves no program (argv empty) and is named in
    cmd.unread, so that the rating can say it cannot see the command (high) rather than rate the wrong word."""
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
        spec = WRAPPERS[name]
        i, end = _wrapper_options(spec, words, i + 1)
        skipped = 0
        while not end and skipped < spec.positionals and i < len(words):
            i, skipped = i + 1, skipped + 1
            if spec.flags is not None:  # options may follow the positional too (flock FILE -n CMD)
                i, end = _wrapper_options(spec, words, i)
        if end == "command":  # flock FILE -c 'CMD': a shell runs CMD
            cmd.argv = ["sh", "-c", *words[i + 1:i + 2]]
            return
        if end:
            cmd.unread = "" if end == "done" else f"{name} {end}"
            cmd.argv = []
            return
    cmd.argv = words[i:]


def _wrapper_options(spec: Wrapper, words: list[str], i: int) -> tuple[int, str]:
    """Skip a wrapper's options from words[i]: (where its command or positionals start, ''); (_, 'done') for an
    option after which there is no command; (where it is, 'command') for its command_option; or (_, the unknown
    option) where its options are all known."""
    while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])):
        word = words[i]
        if word == "--":
            return i + 1, ""
        name = word.split("=", 1)[0]
        if name in spec.no_command:
            return i, "done"
        if spec.command_option and word == spec.command_option:
            return i, "command"
        if name in spec.values:
            i += 1 + (spec.values[name] if "=" not in word else spec.values[name] - 1)
            continue
        if spec.flags is None or name in spec.flags or _ASSIGNMENT.match(word):
            i += 1
            continue
        if not word.startswith("--") and len(word) > 2:  # a cluster of short options (-ac, -n5, -w10)
            letters, k = word[1:], 0
            while k < len(letters):
                opt = "-" + letters[k]
                if opt in spec.no_command:
                    return i, "done"
                if opt in spec.values:
                    i += 1 if k + 1 < len(letters) else 1 + spec.values[opt]  # -w10: attached; -aw 10: next word
                    break
                if opt not in spec.flags:
                    return i, word
                k += 1
            else:
                i += 1
            continue
        return i, word
    return i, ""


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
