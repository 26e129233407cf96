"""Danger ratings shown to the user before a shell command or a write runs.

A rating is advisory (the user still decides), but "high" also stops remembered "allow always" decisions from
applying silently. Rules over-report rather than miss.

This module rates what every command shares: hidden characters and length, substitutions, fork bombs, wrappers in
front of the program and commands hidden in arguments (eval, env -S, watch, find -exec), redirections, variables
that make a program load other code, paths outside the workspace and writes into places that run code later
(tools/safety/destinations.py, places.py). What a program can do with its own arguments is its rater's, from the
table in tools/safety/programs.py.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from localspec.tools.safety.destinations import WRITERS, WRITES, outside_words, rate_destinations
from localspec.tools.safety.display import COMMAND_SHOWN_CHARS, hidden_characters
from localspec.tools.safety.gitconfig import runs_program
from localspec.tools.safety.places import on_path, outside, runs_later
from localspec.tools.safety.programs import DETACH, rater_for
from localspec.tools.safety.rating import HIGH, LOW, MEDIUM, Call, Danger, Ratings
from localspec.tools.shell.parse import ASSIGNMENT as _ASSIGNMENT
from localspec.tools.shell.parse import SimpleCommand, parse, split_wrappers

__all__ = ["HIGH", "LOW", "MEDIUM", "Danger", "rate_shell", "rate_write"]

# A shell function definition: "NAME() {BODY" or "function NAME {BODY". The name must start after a separator, and
# the body is read at most 4000 characters ahead, so the scan stays linear on a megabyte-long command (a
# backreference regex such as ([\w:]+)...\1 took minutes on 40,000 characters).
_FUNCTION = re.compile(r"(?:^|[\s;&|(){}])(?:function\s+)?([^\s;&|(){}<>'\"`$]+)\s*(?:\(\s*\))?\s*\{([^}]{0,4000})")
# Variables that make an ordinary program load or run code of the caller's choice.
_CODE_VARIABLES = {"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PROMPT_COMMAND",
                   "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB",
                   "NODE_OPTIONS", "NODE_PATH", "PAGER", "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE", "SHELLOPTS",
                   "BASHOPTS", "IFS", "PS4", "MANPAGER", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS"}
_CONFIG_KEY = re.compile(r"[A-Za-z][\w-]*(?:\.[^\s'\"=]+)+")
_ELEVATING = {"sudo": "sudo", "doas": "doas", "pkexec": "pkexec", "chroot": "chroot needs root"}
MAX_DEPTH = 3  # commands inside commands (sh -c "sh -c '...'") rated this deep


def rate_shell(command: str, workspace: Path | str) -> Danger:
    ratings = Ratings()
    parsed = parse(command)
    hidden = hidden_characters(command)
    if hidden:
        ratings.add(MEDIUM, f"contains {hidden} control or invisible character(s), shown escaped")
    if len(command) > COMMAND_SHOWN_CHARS:
        ratings.add(MEDIUM, f"is {len(command):,} characters long; the approval shows only the first "
                            f"{COMMAND_SHOWN_CHARS:,}")
    if parsed.error:
        ratings.add(MEDIUM, f"could not fully parse the command ({parsed.error.lower()})")
    if parsed.substitution:
        ratings.add(MEDIUM, "uses command substitution, which can run commands not shown here")
    if _fork_bomb(command):
        ratings.add(HIGH, "looks like a fork bomb")
    root = os.path.realpath(os.fspath(workspace))
    moved = ""  # a `cd` earlier in the line into a place where a relative write lands outside or runs later
    for cmd in parsed.commands:
        if moved and _writes(cmd):
            ratings.add(HIGH, f"writes after {moved}")
        _rate_command(cmd, root, ratings, depth=0)
        if cmd.program in ("cd", "pushd") and cmd.args:
            target = [a for a in cmd.args if not a.startswith("-")][-1:] or cmd.args[-1:]
            why = runs_later(target[0], root)
            if why or outside(target[0], root):
                moved = f"`{cmd.program} {target[0]}` ({why or 'outside the workspace'})"
    return ratings.danger()


def _writes(cmd: SimpleCommand) -> bool:
    """Whether a command writes files (by its program or a redirection), for the `cd` rule."""
    return cmd.program in WRITERS or cmd.program in WRITES or cmd.program in ("sed", "patch", "git") or \
        any(">" in op for op, _ in cmd.redirects)


def _fork_bomb(command: str) -> bool:
    """A function that calls itself in the background or through a pipe (":(){ :|:& };:", "f(){ f & f; }")."""
    for count, m in enumerate(_FUNCTION.finditer(command)):
        if count > 200:
            return True  # hundreds of function definitions in one command: treat as hostile
        name, body = m.group(1), m.group(2)
        calls = re.findall(r"(?:^|[\s;&|({])" + re.escape(name) + r"(?=$|[\s;&|)}])", body)
        if calls and (re.search(r"(?<!&)&(?![&>])", body) or "|" in body):
            return True
    return False


def rate_write(rel: str, *, exists: bool, old_lines: int = 0, new_lines: int = 0, edit: bool = False,
               real: Path | str | None = None) -> Danger:
    """Writes: creating is low, editing low, overwriting medium, overwriting most of a file high.

    real: the target's absolute path; a file in a folder on PATH (.venv/bin) is rated high, because it would
    run in place of a program of that name, even under a remembered "allow always" for that program.
    """
    ratings = Ratings()
    parts = Path(rel).parts
    if real is not None and on_path(os.path.dirname(os.fspath(real))):
        ratings.add(HIGH, f"writes into a folder on PATH ({os.path.dirname(rel) or '.'}): a program named "
                          f"{os.path.basename(rel)!r} there would run in place of the real one")
    if ".git" in parts:
        ratings.add(HIGH, "modifies git internals (.git)")
    if any(p in (".env", ".ssh", ".netrc") or p.endswith((".pem", ".key")) for p in parts):
        ratings.add(MEDIUM, "touches a file that often holds secrets")
    if not exists:
        ratings.add(LOW, f"creates new file {rel}")
    elif edit:
        ratings.add(LOW, f"edits existing file {rel}")
    elif old_lines >= 20 and new_lines < old_lines // 2:
        ratings.add(HIGH, f"overwrites {rel}, shrinking it from {old_lines} to {new_lines} lines")
    else:
        ratings.add(MEDIUM, f"overwrites existing file {rel}")
    return ratings.danger()


def _rate_command(cmd: SimpleCommand, root: str, r: Ratings, depth: int) -> None:
    for wrapper in cmd.wrappers:
        if wrapper in _ELEVATING:
            r.add(HIGH, f"runs with elevated privileges ({_ELEVATING[wrapper]})")
        if wrapper in DETACH:
            r.add(MEDIUM, f"asks a service to run something later or apart ({wrapper}); the tool cannot stop what "
                          "that starts")
    if cmd.unread:
        r.add(HIGH, f"runs a command after options this rating does not know ({cmd.unread[:60]}), so it cannot "
                    "see what runs")
    for op, target in cmd.redirects:
        if target.isdigit() or target == "-" or op == "<<<":
            continue  # fd duplication like 2>&1; a here-string is text, not a file
        why = runs_later(target, root) if ">" in op else ""
        if why:
            r.add(HIGH, f"redirects output into {target}: {why}")
        if ">" in op and outside(target, root):
            r.add(HIGH, f"redirects output outside the workspace ({op} {target})")
        elif "<" in op and outside(target, root):
            r.add(MEDIUM, f"reads input from outside the workspace ({target})")
    prog, args = cmd.program, cmd.args

    def nested(inner: str | list[str]) -> None:
        if depth >= MAX_DEPTH:
            return
        if isinstance(inner, str):
            for sub in parse(inner).commands:
                _rate_command(sub, root, r, depth + 1)
        else:
            sub = SimpleCommand(words=list(inner))
            split_wrappers(sub)
            _rate_command(sub, root, r, depth + 1)

    _rate_nested(cmd, nested)
    if not prog:
        return
    if "$" in prog or "`" in prog:
        r.add(MEDIUM, f"runs a command named by a variable or substitution ({cmd.argv[0]}), which cannot be checked")
    call = Call(cmd, root, r, depth, nested)
    outside_args = outside_words(prog, args, root)
    rate_destinations(prog, args, call.flags, root, r)
    for rate in rater_for(prog):
        rate(call)
    _rate_variables(cmd, r)
    if outside_args:
        shown = ", ".join(outside_args[:3])
        if prog in WRITERS or (prog == "sed" and any(a.startswith("-i") for a in call.flags)):
            r.add(HIGH, f"modifies paths outside the workspace ({shown})")
        else:
            r.add(MEDIUM, f"uses paths outside the workspace ({shown})")


def _rate_variables(cmd: SimpleCommand, r: Ratings) -> None:
    """Variables set for the command that make it load or run other code (LD_PRELOAD, GIT_CONFIG_KEY_n, ...)."""
    # GIT_CONFIG_KEY_n=core.pager, GIT_CONFIG_PARAMETERS="'core.pager'='sh -c id'": every dotted name in them.
    keys = [k for w in cmd.words if _ASSIGNMENT.match(w)
            for name, v in [w.split("=", 1)] if name.startswith("GIT_CONFIG_KEY") or name == "GIT_CONFIG_PARAMETERS"
            for k in _CONFIG_KEY.findall(v)]
    key = next((k for k in keys if runs_program(k, None)), None)
    if key:
        r.add(HIGH, f"sets git configuration that runs a program ({key.strip()[:80]})")
    injected = [w.split("=", 1)[0] for w in cmd.words if _ASSIGNMENT.match(w)]
    risky = [n for n in injected if n in _CODE_VARIABLES or n.startswith(("GIT_", "LD_", "DYLD_"))]
    if risky:
        r.add(MEDIUM, f"sets {', '.join(risky[:3])}, which can make the program load or run other code")


def _rate_nested(cmd: SimpleCommand, nested) -> None:
    """Commands hidden inside another command's arguments: eval, env -S, watch, find -exec."""
    prog, args = cmd.program, cmd.args
    if prog == "eval":
        nested(" ".join(args))
    if "env" in cmd.wrappers:
        words = cmd.words
        for i, word in enumerate(words):
            if word in ("-S", "--split-string") and i + 1 < len(words):
                nested(words[i + 1])
            elif word.startswith("--split-string="):
                nested(word.split("=", 1)[1])
    if cmd.wrappers and cmd.wrappers[-1] in ("watch", "su") and len(cmd.argv) == 1 and " " in cmd.argv[0]:
        nested(cmd.argv[0])
    if prog == "find":
        for i, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
                nested(args[i + 1:end])
