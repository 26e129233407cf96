"""Which git configuration runs programs, and what a `git config` command line changes (for danger ratings).

Why: git runs programs named in its configuration, in every repository that reads it, long after the command
that set them: `git config core.pager "sh -c id"` makes the next `git log` run `sh -c id`, core.fsmonitor runs on
every `git status`, an alias starting with `!` is a shell command. So setting such a key is rated high, whatever
the spelling (`git config set`, `--add`, `--replace-all`, `-c`, GIT_CONFIG_KEY_n).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from localspec.tools.safety.argv_options import Syntax, long_name, read

# Keys (lower case; fnmatch patterns) whose value is a program, a shell command, or a file of more configuration.
RUNS_PROGRAM = (
    "core.pager", "core.editor", "core.fsmonitor", "core.sshcommand", "core.askpass", "core.gitproxy",
    "core.alternaterefscommand", "core.attributesfile", "*.hookspath", "credential.helper", "credential.*.helper",
    "diff.external", "diff.*.command", "diff.*.textconv", "difftool.*.cmd", "difftool.*.path", "merge.*.driver",
    "mergetool.*.cmd", "mergetool.*.path", "filter.*.clean", "filter.*.smudge", "filter.*.process", "gpg.program",
    "gpg.*.program", "sequence.editor", "pager.*", "interactive.difffilter", "uploadpack.packobjectshook",
    "remote.*.uploadpack", "remote.*.receivepack", "protocol.allow", "protocol.*.allow", "include.path",
    "includeif.*.path", "init.templatedir", "web.browser", "browser.*.cmd", "browser.*.path", "man.viewer",
    "man.*.cmd", "man.*.path", "sendemail.smtpserver", "sendemail.sendmailcmd", "sendemail.tocmd",
    "sendemail.cccmd", "sendemail.headercmd", "trailer.*.command", "trailer.*.cmd", "safe.directory",
    "instaweb.httpd", "imap.tunnel", "core.hookspath",
)
# Keys that run a program only when their value says so: `alias.x = !cmd`, `submodule.x.update = !cmd`.
RUNS_WHEN_BANG = ("alias.*", "submodule.*.update")

_GLOBAL_VALUES = Syntax("Cc", frozenset({"--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
                                         "--exec-path", "--list-cmds", "--attr-source"}),
                        frozenset({"--no-pager", "--paginate", "--bare", "--no-replace-objects", "--literal-pathspecs",
                                   "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
                                   "--no-optional-locks", "--no-advice", "--html-path", "--man-path", "--info-path",
                                   "--version", "--help"}))
_CONFIG = Syntax("f", frozenset({"--file", "--blob", "--type", "--default", "--comment", "--value"}),
                 frozenset({"--global", "--system", "--local", "--worktree", "--get", "--get-all", "--get-regexp",
                            "--get-urlmatch", "--replace-all", "--add", "--unset", "--unset-all", "--rename-section",
                            "--remove-section", "--list", "--edit", "--get-color", "--get-colorbool", "--bool",
                            "--int", "--bool-or-int", "--path", "--expiry-date", "--null", "--name-only",
                            "--includes", "--no-includes", "--show-origin", "--show-scope", "--fixed-value", "--all",
                            "--no-type", "--no-value", "--url"}))
_READS = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool"}
_REMOVES = {"--unset", "--unset-all", "--remove-section", "--rename-section"}


def runs_program(key: str, value: str | None) -> bool:
    """Whether setting `key` (to `value`; None: not known) can make git run a program."""
    key = key.strip().lower()
    if any(fnmatch.fnmatchcase(key, p) for p in RUNS_PROGRAM):
        return True
    return any(fnmatch.fnmatchcase(key, p) for p in RUNS_WHEN_BANG) and (value is None or value.lstrip()[:1] == "!")


@dataclass(frozen=True)
class ConfigChange:
    """What a `git config` command line writes."""
    scope: str  # "local", "global", "system", "worktree", "file"
    file: str | None  # the file named with -f/--file
    runs: str  # the key that runs a program ('' when none)


def split_global(args: list[str]) -> tuple[list[tuple[str, str | None]], str | None, list[str]]:
    """(the `-c KEY=VALUE` / `--config-env=KEY=VAR` settings as (key, value or None), the subcommand, its
    arguments) of git's arguments (everything after `git`). Git's own options end at the first other word."""
    settings: list[tuple[str, str | None]] = []
    known = _GLOBAL_VALUES.long_values | _GLOBAL_VALUES.long_flags
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--" or not word.startswith("-"):
            j = i + 1 if word == "--" else i
            return settings, (args[j] if j < len(args) else None), args[j + 1:]
        value: str | None = None
        if word.startswith("--"):
            given, eq, value = word.partition("=")
            name = long_name(given, known)
            if name in _GLOBAL_VALUES.long_values and not eq:
                value = args[i + 1] if i + 1 < len(args) else None
                i += 1
            if name == "--config-env" and value:
                settings.append((value.partition("=")[0], None))  # the value comes from a variable: unknown
        elif word[1:2] in ("c", "C"):
            value = word[2:]
            if not value:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if word[1] == "c":
                key, eq, val = value.partition("=")
                settings.append((key, val if eq else None))
        i += 1
    return settings, None, []


def inline_runs(args: list[str]) -> str:
    """The first `git -c KEY=VALUE` / `--config-env=KEY=VAR` setting that runs a program, or ''."""
    settings, _, _ = split_global(args)
    return next((key for key, value in settings if runs_program(key, value)), "")


def config_write(args: list[str]) -> ConfigChange | None:
    """What `git [globals] config ...` writes, or None when the command is not a configuration write."""
    _, sub, rest = split_global(args)
    if sub != "config":
        return None
    reading = read(rest, _CONFIG)
    words = list(reading.positionals)
    verb = words.pop(0) if words and words[0] in ("get", "list", "set", "unset", "edit", "rename-section",
                                                  "remove-section") else None
    flags = {name for name, _ in reading.options}
    if verb in ("get", "list") or flags & _READS or (verb is None and not flags & _REMOVES and len(words) < 2
                                                     and not flags & {"--edit", "-e", "--add", "--replace-all"}):
        return None
    scope = next((s for s in ("global", "system", "worktree") if f"--{s}" in flags), "local")
    files = reading.values("-f", "--file")
    removing = verb in ("unset", "rename-section", "remove-section") or bool(flags & _REMOVES)
    runs = ""
    if not removing and words:
        key, value = words[0], words[1] if len(words) > 1 else None
        runs = f"{key} {value or ''}".strip() if runs_program(key, value) else ""
    if verb == "edit" or flags & {"--edit", "-e"}:
        runs = runs or "an editor on the configuration file, which can set anything"
    return ConfigChange("file" if files else scope, files[0] if files else None, runs)
