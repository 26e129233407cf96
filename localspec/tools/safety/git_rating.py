"""Git's danger rating, in one place: what each subcommand can destroy, rewrite or run.

Why one rater: git's rules were five blocks of one long if-chain (push/reset/clean, `-c` before the subcommand,
clone templates, `git config`, branch and stash), and the subcommands that run a program given in their arguments
were in none of them (`git rebase --exec`, `git submodule foreach`, `git difftool -x`, `git filter-branch
--tree-filter`, `git grep -O'cmd'`, which does run cmd). The subcommand is found after git's own options
(`git -C dir push -f`), and options are read in every spelling: attached (`-xcmd`, `-O'cmd'`), in a cluster,
`--exec=cmd`, `--exec cmd`, and abbreviated (`--ex`): an abbreviation of an option that runs a program counts as
that option, so an unknown spelling errs high.
"""
from __future__ import annotations

from dataclasses import dataclass

from localspec.tools.safety.argv_options import Syntax, read
from localspec.tools.safety.gitconfig import config_write, inline_runs, runs_program, split_global
from localspec.tools.safety.places import outside, runs_later
from localspec.tools.safety.rating import HIGH, MEDIUM, Call, long_given


@dataclass(frozen=True)
class _Runner:
    """A subcommand's options whose value (or, for a flag, whose use) runs a program."""
    short: str  # short letters that take a value (a cluster ending in one of these runs its value)
    long: frozenset[str]  # long options that run their value
    what: str


def _runner(short: str, *long: str, what: str) -> _Runner:
    return _Runner(short, frozenset(long), what)


_FILTERS = ("--tree-filter", "--index-filter", "--env-filter", "--msg-filter", "--commit-filter", "--parent-filter",
            "--tag-name-filter", "--setup")
_REMOTE_PROGRAM = ("--upload-pack", "--receive-pack", "--exec")
RUNNERS: dict[str, _Runner] = {
    "rebase": _runner("x", "--exec", what="runs a command after each commit it replays (git rebase --exec)"),
    "difftool": _runner("x", "--extcmd", what="runs the given program on every changed file (git difftool -x)"),
    "grep": _runner("O", "--open-files-in-pager", what="runs the given program on the files found (git grep -O)"),
    "filter-branch": _runner("", *_FILTERS, what="runs shell code on every commit (git filter-branch --*-filter)"),
    "clone": _runner("u", *_REMOTE_PROGRAM, what="runs the given program as the remote's git (--upload-pack)"),
    "fetch": _runner("", *_REMOTE_PROGRAM, what="runs the given program as the remote's git (--upload-pack)"),
    "pull": _runner("", *_REMOTE_PROGRAM, what="runs the given program as the remote's git (--upload-pack)"),
    "ls-remote": _runner("", *_REMOTE_PROGRAM, what="runs the given program as the remote's git (--upload-pack)"),
    "push": _runner("", *_REMOTE_PROGRAM, what="runs the given program as the remote's git (--receive-pack)"),
    "archive": _runner("", *_REMOTE_PROGRAM, what="runs the given program as the remote's git (--exec)"),
    "send-email": _runner("", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd",
                          what="runs the given program to send or address mail (git send-email --*-cmd)"),
}
# Subcommands (and their own subcommands) that run a command line given in their arguments.
RUNS_ARGUMENTS = {("submodule", "foreach"): "runs a command in every submodule (git submodule foreach)",
                  ("bisect", "run"): "runs a command on every commit it tests (git bisect run)"}
# Subcommands that always run something of the user's configuration or another program.
RUNS_TOOLS = {"mergetool": "runs the configured merge tool", "instaweb": "starts a web server (git instaweb)",
              "difftool": "runs the configured diff tool"}


def _runs(args: list[str], runner: _Runner) -> str:
    """The first value (or option) in `args` that runs a program, in any spelling; ''."""
    reading = read(args, Syntax(runner.short, runner.long))
    for name, value in reading.options:
        if name in runner.long or (name[1:] and name[1:] in runner.short):
            return value or name
    for arg in args:  # an abbreviation read() could not resolve (several names share it): errs high
        given = arg.split("=", 1)[0]
        if given.startswith("--") and len(given) >= 4 and any(n.startswith(given) for n in runner.long):
            return arg
    return ""


def rate_git(call: Call) -> None:
    args = call.args
    _, sub, rest = split_global(args)
    before = args[:len(args) - len(rest) - (1 if sub is not None else 0)]  # git's own options
    flags = [a for a in rest if a.startswith("-")]
    short = "".join(a[1:] for a in flags if not a.startswith("--"))
    words = [a for a in rest if not a.startswith("-")]
    if any((a.startswith("-c") and not a.startswith("--")) or a.split("=", 1)[0] in ("--config-env", "--exec-path")
           for a in before):
        call.add(MEDIUM, "sets git configuration for this run (-c), which can make git run other programs")
    inline = inline_runs(args)
    if inline:
        call.add(HIGH, f"sets git configuration that runs a program for this run ({inline})")
    if sub is None:
        return
    _rate_history(call, sub, rest, flags, short, words)
    _rate_new_repository(call, sub, rest)
    _rate_config(call)
    runner = RUNNERS.get(sub)
    found = _runs(rest, runner) if runner is not None else ""
    if found:
        call.add(HIGH, f"{runner.what}: {found[:60]}")  # type: ignore[union-attr]  # found implies runner
    if sub == "filter-branch":
        call.add(HIGH, "rewrites every commit of the history (git filter-branch)")
    why = RUNS_ARGUMENTS.get((sub, words[0] if words else ""))
    if why:
        call.add(HIGH, why)
    if sub in RUNS_TOOLS and not found:
        call.add(MEDIUM, RUNS_TOOLS[sub])
    if sub == "help" and any(a in ("-w", "--web") or long_given([a], "--web") for a in flags):
        call.add(MEDIUM, "opens a web browser (git help --web)")


def _rate_history(call: Call, sub: str, rest: list[str], flags: list[str], short: str, words: list[str]) -> None:
    """What a subcommand discards or overwrites: commits, uncommitted changes, untracked files, a remote."""
    if sub == "push":
        forced = any(a in ("-f", "--mirror") or a.startswith("--force") or long_given([a], "--force")
                     for a in flags) or "f" in short or any(a.startswith("+") for a in words)
        call.add(HIGH if forced else MEDIUM, "force-pushes, rewriting remote history (git push --force)"
                 if forced else "pushes commits to a remote (git push)")
    elif sub == "reset" and long_given(flags, "--hard"):
        call.add(HIGH, "discards uncommitted changes (git reset --hard)")
    elif sub == "clean" and ("f" in short or long_given(flags, "--force")):
        call.add(HIGH, "deletes untracked files (git clean -f)")
    elif sub in ("checkout", "restore") and ("--" in rest or "." in words):
        call.add(MEDIUM, "may discard uncommitted changes")
    elif (sub == "branch" and ("D" in short or (long_given(flags, "--delete") and long_given(flags, "--force")))) \
            or (sub == "stash" and words[:1] in (["drop"], ["clear"])):
        call.add(MEDIUM, "discards commits or stashed changes (git branch -D / git stash drop)")


def _rate_new_repository(call: Call, sub: str, rest: list[str]) -> None:
    """clone, init and submodule copy hooks from a template folder and take configuration for the new repository."""
    if sub not in ("clone", "init", "submodule"):
        return
    if any(a.startswith("--temp") for a in rest):  # --template: hooks copied into the new repository
        call.add(HIGH, "copies hooks from a template folder into the new repository (--template)")
    settings = read(rest, Syntax("c", frozenset({"--config"}))).values("-c", "--config")
    risky = next((v for v in settings if runs_program(v.partition("=")[0], v.partition("=")[2] or None)), None)
    if risky:
        call.add(HIGH, f"sets git configuration that runs a program in the new repository ({risky[:80]})")


def _rate_config(call: Call) -> None:
    """`git config` that sets a key which runs a program (core.pager, core.fsmonitor, alias.x=!cmd, ...), or writes
    your global configuration: high. Other configuration writes: medium. Reads: nothing."""
    change = config_write(call.args)
    if change is None:
        return
    if change.runs:
        call.add(HIGH, f"sets git configuration that runs a program ({change.runs})")
    if change.scope in ("global", "system"):
        call.add(HIGH, f"changes your {change.scope} git configuration, which every repository reads")
    elif change.file is not None and (outside(change.file, call.root) or runs_later(change.file, call.root)):
        call.add(HIGH, f"changes a git configuration file ({change.file})")
    call.add(MEDIUM, "changes git configuration")
