"""Danger ratings shown to the user before a shell command or a write runs.

A rating is advisory (the user still decides), but "high" also stops remembered "allow always"
decisions from applying silently. Rules over-report rather than miss.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from localspec.tools.safety.argv_options import Syntax, embedded_paths, read
from localspec.tools.safety.display import COMMAND_SHOWN_CHARS, hidden_characters
from localspec.tools.safety.gitconfig import config_write, inline_runs, runs_program
from localspec.tools.shell.parse import ASSIGNMENT as _ASSIGNMENT
from localspec.tools.shell.parse import SHELLS, SimpleCommand, parse, split_wrappers

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


class _Ratings:
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


# A shell function definition: "NAME() {BODY" or "function NAME {BODY". The name must start after a separator, and
# the body is read at most 4000 characters ahead, so the scan stays linear on a megabyte-long command (a
# backreference regex such as ([\w:]+)...\1 took minutes on 40,000 characters).
_FUNCTION = re.compile(r"(?:^|[\s;&|(){}])(?:function\s+)?([^\s;&|(){}<>'\"`$]+)\s*(?:\(\s*\))?\s*\{([^}]{0,4000})")
_SAFE_DEVICES = {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero",
                 "/dev/random", "/dev/urandom"}
_INTERPRETERS = SHELLS | {"python", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun",
                           "Rscript", "tclsh", "osascript", "pwsh"}
# Short flags after which an interpreter's next word (or the flag's own tail: -e'...') is code to run.
_CODE_LETTERS = {"python": "c", "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "php": "r", "lua": "e",
                 "Rscript": "e", "osascript": "e", "deno": "", "bun": "e", "pwsh": "c", "tclsh": ""}
# Inline code that deletes, overwrites or runs other programs: what we look for when we cannot rate the code.
_DESTRUCTIVE_CODE = re.compile(
    r"rmtree|unlink|\bremove\s*\(|\brmdir|rm_r|rm_rf|FileUtils|rmSync|rmdirSync|\bsystem\s*\(|\bsystem\b|"
    r"subprocess|Popen|popen|child_process|execSync|spawnSync|\bexec[lv]p?e?\s*\(|os\.exec|qx|shutil\.move|"
    r"os\.rename|truncate|write_text|write_bytes|\bfork\b|\bopen\s*\([^)]*[\"'][wa+]|writeFileSync|\bkill\b|\brm\s+-",
    re.IGNORECASE)
# Variables that make an ordinary program load or run code of the caller's choice.
_CODE_VARIABLES = {"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PROMPT_COMMAND",
                   "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB",
                   "NODE_OPTIONS", "NODE_PATH", "PAGER", "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE", "SHELLOPTS",
                   "BASHOPTS", "IFS", "PS4", "MANPAGER", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS"}
_FIND_FILTERS = {"-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename", "-empty",
                 "-newer", "-mtime", "-mmin", "-size", "-perm", "-user", "-inum", "-samefile", "-lname", "-ilname"}
# Programs that hand a command to a service which runs it outside this call's process tree.
_DETACH = {"systemd-run", "at", "batch", "launchctl", "daemonize", "start-stop-daemon", "disown", "atd",
           "dbus-send", "gdbus", "busctl", "loginctl"}
_NETWORK = {"curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "rsync", "ftp", "telnet",
            "socat", "aria2c", "http", "https"}
_DISK = {"dd", "mkfs", "mke2fs", "fdisk", "sfdisk", "parted", "wipefs", "shred", "mkswap", "swapoff"}
_POWER = {"shutdown", "reboot", "halt", "poweroff"}
_WRITERS = {"rm", "rmdir", "mv", "cp", "tee", "truncate", "ln", "chmod", "chown", "chgrp", "touch",
            "mkdir", "install", "rsync", "dd", "shred", "unlink", "sponge", "mkfifo", "setfacl", "chattr"}
_INSTALLERS = {"pip", "pip3", "npm", "pnpm", "yarn", "apt", "apt-get", "brew", "gem", "cargo", "go",
               "conda", "uv", "bun", "dnf", "yum", "apk", "pacman"}


_CONFIG_KEY = re.compile(r"[A-Za-z][\w-]*(?:\.[^\s'\"=]+)+")


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


@dataclass(frozen=True)
class _Writes:
    """A program whose options name where it writes (or, for make, whose recipes it runs): read in every
    spelling (options.read), so `-t DIR`, `-tDIR`, `--target-directory=DIR` and `--target DIR` are one rule."""
    syntax: Syntax
    into: frozenset[str]  # the options whose value is a destination
    runs: frozenset[str] = frozenset()  # options whose value is a program or code to run
    verb: str = "writes to"


_COPY = _Writes(Syntax("tS", _f("--target-directory", "--suffix"),
                       _f("--no-target-directory", "--recursive", "--force", "--archive", "--symbolic",
                          "--verbose", "--interactive", "--update", "--backup", "--link", "--no-clobber")),
                _f("-t", "--target-directory"))
_CC = _Writes(Syntax("oIDLlUxB", _f("--output")), _f("-o", "--output"))
_WRITES: dict[str, _Writes] = {
    "cp": _COPY, "mv": _COPY, "ln": _COPY,
    "install": _Writes(Syntax("gmoSt", _f("--target-directory", "--suffix", "--group", "--mode", "--owner",
                                         "--strip-program")),
                       _f("-t", "--target-directory"), _f("--strip-program")),
    "tar": _Writes(Syntax("bCfFgHIKLNTVX", _f("--directory", "--file", "--use-compress-program", "--to-command",
                                              "--info-script", "--new-volume-script", "--checkpoint-action",
                                              "--rsh-command", "--files-from", "--exclude-from", "--index-file",
                                              "--listed-incremental", "--transform", "--xform"),
                          _f("--extract", "--create", "--verbose", "--gzip", "--to-stdout", "--exclude")),
                   _f("-C", "--directory"),
                   _f("-I", "-F", "--use-compress-program", "--to-command", "--info-script", "--new-volume-script",
                      "--checkpoint-action", "--rsh-command")),
    "unzip": _Writes(Syntax("dxP"), _f("-d")),
    "sort": _Writes(Syntax("kotST", _f("--output", "--key", "--field-separator", "--buffer-size",
                                       "--temporary-directory", "--compress-program", "--files0-from",
                                       "--random-source", "--batch-size", "--parallel", "--sort")),
                    _f("-o", "--output"), _f("--compress-program")),
    "patch": _Writes(Syntax("BDdFioprVYzg", _f("--prefix", "--ifdef", "--directory", "--fuzz", "--input",
                                               "--output", "--strip", "--reject-file", "--version-control",
                                               "--basename-prefix", "--suffix", "--get", "--quoting-style")),
                     _f("-o", "--output", "-d", "--directory", "-r", "--reject-file", "-B", "--prefix", "-Y",
                        "--basename-prefix")),
    "make": _Writes(Syntax("CfIoW", _f("--directory", "--file", "--makefile", "--include-dir", "--old-file",
                                       "--assume-old", "--what-if", "--new-file", "--assume-new", "--eval")),
                    _f("-C", "--directory", "-f", "--file", "--makefile"), _f("--eval"),
                    verb="runs the build recipes of"),
    "curl": _Writes(Syntax("AbcCdDeEFHKmoPQrTuUwxXyYzt", _f("--output", "--output-dir", "--cookie-jar",
                                                           "--dump-header", "--trace", "--trace-ascii", "--libcurl",
                                                           "--stderr", "--config", "--data", "--header")),
                    _f("-o", "--output", "--output-dir", "-c", "--cookie-jar", "-D", "--dump-header", "--trace",
                       "--trace-ascii", "--libcurl", "--stderr")),
    "wget": _Writes(Syntax("OoaPeiBtTwQUlARDIX", _f("--output-document", "--directory-prefix", "--output-file",
                                                   "--append-output", "--execute", "--input-file")),
                    _f("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a",
                       "--append-output"), _f("-e", "--execute")),
    "cc": _CC, "gcc": _CC, "g++": _CC, "c++": _CC, "clang": _CC, "clang++": _CC,
}
# Files and folders whose contents run later: shell start-up files, git's and ssh's configuration, editors'
# start-up files, user services. A write there is high whatever the folder it is in.
_STARTUP_FILES = _f(".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
                    ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc",
                    ".mkshrc", ".inputrc", ".xprofile", ".xinitrc", ".xsession", ".xsessionrc", ".pam_environment",
                    ".gitconfig", ".gitattributes_global", ".vimrc", ".gvimrc", ".exrc", ".emacs", ".npmrc",
                    ".yarnrc", ".pythonstartup", ".pythonrc", ".netrc", ".curlrc", ".wgetrc", ".pypirc",
                    ".envrc", "authorized_keys", "crontab", "sudoers")
_CODE_FOLDERS = _f(".git", ".ssh", ".gnupg", ".bashrc.d", ".profile.d", "profile.d", "cron.d", "init.d",
                   "sudoers.d", "autostart", "systemd", "environment.d", "git", "fish")
# Folders that hold code only under these parents (~/.config/git, ~/.config/systemd): "git" alone is too common.
_CODE_PARENTS = {"git": ".config", "fish": ".config", "autostart": ".config", "systemd": ".config",
                 "environment.d": ".config"}


def rate_shell(command: str, workspace: Path | str) -> Danger:
    ratings = _Ratings()
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
            why = _runs_later(target[0], root)
            if why or _outside(target[0], root):
                moved = f"`{cmd.program} {target[0]}` ({why or 'outside the workspace'})"
    return ratings.danger()


def _writes(cmd: SimpleCommand) -> bool:
    """Whether a command writes files (by its program or a redirection), for the `cd` rule."""
    return cmd.program in _WRITERS or cmd.program in _WRITES or cmd.program in ("sed", "patch", "git") or \
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
    ratings = _Ratings()
    parts = Path(rel).parts
    if real is not None and _on_path(os.path.dirname(os.fspath(real))):
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


def _long(flags: list[str], name: str) -> bool:
    """Whether a long option is given, also abbreviated (GNU and git accept "rm --recu", "git reset --har")."""
    for flag in flags:
        given = flag.split("=", 1)[0]
        if given.startswith("--") and len(given) >= 4 and name.startswith(given):
            return True
    return False


def _on_path(folder: str) -> bool:
    try:
        real = os.path.realpath(folder)
        return any(os.path.isabs(p) and os.path.realpath(p) == real
                   for p in os.environ.get("PATH", "").split(os.pathsep))
    except (OSError, ValueError):
        return True


def _rate_command(cmd: SimpleCommand, root: str, r: _Ratings, depth: int) -> None:
    for wrapper in cmd.wrappers:
        if wrapper in ("sudo", "doas"):
            r.add(HIGH, f"runs with elevated privileges ({wrapper})")
        if wrapper in _DETACH:
            r.add(MEDIUM, f"asks a service to run something later or apart ({wrapper}); the tool cannot stop what "
                          "that starts")
    for op, target in cmd.redirects:
        if target.isdigit() or target == "-":
            continue  # fd duplication like 2>&1
        why = _runs_later(target, root) if ">" in op else ""
        if why:
            r.add(HIGH, f"redirects output into {target}: {why}")
        if ">" in op and _outside(target, root):
            r.add(HIGH, f"redirects output outside the workspace ({op} {target})")
        elif "<" in op and _outside(target, root):
            r.add(MEDIUM, f"reads input from outside the workspace ({target})")
    prog, args = cmd.program, cmd.args
    if depth < 3:
        _rate_nested(cmd, root, r, depth)
    if not prog:
        return
    if "$" in prog or "`" in prog:
        r.add(MEDIUM, f"runs a command named by a variable or substitution ({cmd.argv[0]}), which cannot be checked")
    flags = [a for a in args if a.startswith("-")]
    short = "".join(a[1:] for a in flags if not a.startswith("--"))
    positional = [a for a in args if not a.startswith("-")]
    outside = _outside_words(prog, args, root)
    _rate_destinations(prog, args, flags, root, r)

    if prog in ("su", "sudo", "doas"):
        r.add(HIGH, f"runs with elevated privileges ({prog})")
    interpreter = prog in _INTERPRETERS or prog.startswith(("python", "perl", "ruby", "node", "php"))
    code = _inline_code(prog, args) if interpreter else None
    if cmd.piped and interpreter and not [a for a in positional if a != "-"] and code is None:
        r.add(HIGH, f"pipes data into a shell/interpreter to execute ({prog})")
    elif interpreter and code is None and not [a for a in positional if a != "-"] and \
            any("<" in op for op, _ in cmd.redirects):
        r.add(MEDIUM, f"runs code fed to {prog} on its input, which is not rated here")
    if code is not None:
        if prog in SHELLS:
            if depth < 3:
                for sub in parse(code).commands:
                    _rate_command(sub, root, r, depth + 1)
        elif _DESTRUCTIVE_CODE.search(code):
            r.add(HIGH, f"runs inline {prog} code that deletes, writes or runs other programs")
        else:
            r.add(MEDIUM, f"runs inline {prog} code")
    if prog == "rm":
        if "r" in short.lower() or _long(flags, "--recursive"):
            r.add(HIGH, "deletes recursively (rm -r)")
        else:
            r.add(MEDIUM, "deletes files (rm)")
    if prog in _DISK or prog.startswith("mkfs"):
        r.add(HIGH, f"can overwrite or wipe disks ({prog})")
    if prog in ("chmod", "chown", "chgrp"):
        if "R" in short or _long(flags, "--recursive"):
            r.add(HIGH, f"changes permissions or ownership recursively ({prog} -R)")
        elif prog != "chmod":
            r.add(HIGH, f"changes file ownership ({prog})")
        elif any(a in ("777", "a+rwx", "o+w") for a in positional):
            r.add(MEDIUM, "makes files world-writable")
    if prog == "git" and positional:
        subcommand = positional[0]
        if subcommand == "push":
            forced = any(a in ("-f", "--mirror") or a.startswith("--force") or _long([a], "--force")
                         for a in flags) or "f" in short or any(a.startswith("+") for a in positional[1:])
            r.add(HIGH if forced else MEDIUM, "force-pushes, rewriting remote history (git push --force)"
                  if forced else "pushes commits to a remote (git push)")
        elif subcommand == "reset" and _long(flags, "--hard"):
            r.add(HIGH, "discards uncommitted changes (git reset --hard)")
        elif subcommand == "clean" and ("f" in short or _long(flags, "--force")):
            r.add(HIGH, "deletes untracked files (git clean -f)")
        elif subcommand in ("checkout", "restore") and ("--" in args or "." in positional[1:]):
            r.add(MEDIUM, "may discard uncommitted changes")
    before_sub = args[:args.index(positional[0])] if positional else args
    if prog == "git" and any(a in ("-c", "--config-env", "--exec-path") or a.startswith(("--config-env=", "--exec-path="))
                             for a in before_sub):
        r.add(MEDIUM, "sets git configuration for this run (-c), which can make git run other programs")
    if prog == "git" and positional and positional[0] in ("clone", "init", "submodule"):
        sub_args = args[args.index(positional[0]) + 1:]
        if any(a.startswith("--temp") for a in sub_args):  # --template: hooks copied into the new repository
            r.add(HIGH, "copies hooks from a template folder into the new repository (--template)")
        settings = read(sub_args, Syntax("c", frozenset({"--config"}))).values("-c", "--config")
        risky_setting = next((v for v in settings if runs_program(v.partition("=")[0], v.partition("=")[2] or None)),
                             None)
        if risky_setting:
            r.add(HIGH, f"sets git configuration that runs a program in the new repository ({risky_setting[:80]})")
    if prog == "git":
        _rate_git_config(args, root, r)
        inline = inline_runs(args)
        if inline:
            r.add(HIGH, f"sets git configuration that runs a program for this run ({inline})")
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
    if prog in _DETACH or (prog == "tmux" and "-d" in args) or (prog == "screen" and any("d" in f for f in flags)):
        r.add(MEDIUM, f"asks a service to run something later or apart ({prog}); the tool cannot stop what "
                      "that starts")
    if prog == "rsync" and any(a.startswith(("--del", "--remove-source")) for a in flags):
        r.add(HIGH, "deletes files (rsync --delete / --remove-source-files)")
    if prog == "git" and positional and (
            (positional[0] == "branch" and ("D" in short or (_long(flags, "--delete") and _long(flags, "--force"))))
            or (positional[0] == "stash" and positional[1:2] in (["drop"], ["clear"]))):
        r.add(MEDIUM, "discards commits or stashed changes (git branch -D / git stash drop)")
    if prog in _NETWORK:
        r.add(MEDIUM, f"uses the network ({prog})")
    if prog in _INSTALLERS and ("install" in positional or "add" in positional[:1]):
        r.add(MEDIUM, f"installs packages ({prog})")
    if prog in _POWER or (prog in ("systemctl", "init") and set(positional) & {"poweroff", "reboot", "halt", "0", "6"}):
        r.add(HIGH, f"shuts down or reboots the machine ({prog})")
    if prog in ("kill", "pkill", "killall"):
        if "-1" in positional or "-1" in args[-1:]:
            r.add(HIGH, "kills every process you own (kill -1)")
        else:
            r.add(MEDIUM, f"stops processes ({prog})")
    if prog in ("mount", "umount", "iptables", "nft", "crontab", "visudo", "passwd", "useradd", "userdel"):
        r.add(HIGH, f"changes system configuration ({prog})")
    if prog == "eval":
        r.add(MEDIUM, "evaluates a dynamically built command (eval)")
    if prog == "find" and ("-delete" in args or any(a in ("rm", "-execdir") for a in args)):
        if any(a in _FIND_FILTERS for a in args):
            r.add(MEDIUM, "deletes files found by find")
        else:  # "find . -delete", "find . -type f -exec rm {} +": everything below the start folders
            r.add(HIGH, "deletes everything find walks through (find -delete / -exec rm without a name filter)")
    if prog == "find" and any(a in ("-exec", "-execdir", "-ok", "-okdir") for a in args):
        r.add(MEDIUM, "runs a command on every file found (find -exec)")
    if prog == "find" and any(a in ("-fprint", "-fprint0", "-fprintf", "-fls") for a in args):
        r.add(MEDIUM, "writes a file (find -fprint)")
    if outside:
        shown = ", ".join(outside[:3])
        if prog in _WRITERS or (prog == "sed" and any(a.startswith("-i") for a in flags)):
            r.add(HIGH, f"modifies paths outside the workspace ({shown})")
        else:
            r.add(MEDIUM, f"uses paths outside the workspace ({shown})")


def _outside_words(prog: str, args: list[str], root: str) -> list[str]:
    """The arguments that name a path outside the workspace. A program whose options are known is read exactly
    (`gcc -Isrc/include` is -I with src/include); any other over-reports (options.embedded_paths)."""
    spec = _WRITES.get(prog)
    if spec is None:
        return [a for a in args if _outside(a, root)]
    reading = read(args, spec.syntax)
    words = reading.positionals + [v for _, v in reading.options if v is not None]
    return [w for w in words if any(_outside_path(p, root) for p in embedded_paths(w, short_tails=False))] + \
        [a for a in args if a.startswith("--") and "=" in a and _outside_path(a.split("=", 1)[1], root)]


def _rate_destinations(prog: str, args: list[str], flags: list[str], root: str, r: _Ratings) -> None:
    """Where a command writes, read in every spelling: outside the workspace, or a place that runs code later."""
    spec = _WRITES.get(prog)
    places: list[str] = []
    if spec is not None:
        reading = read(args, spec.syntax)
        places += reading.values(*spec.into)
        for target in reading.values(*spec.into):
            if _outside(target, root):
                r.add(HIGH, f"{spec.verb} a folder or file outside the workspace ({target})")
        runs = reading.values(*spec.runs) + [n for n, v in reading.options if n in spec.runs and v is None]
        if runs:
            r.add(HIGH, f"runs a program or code given in its options ({prog} {runs[0][:60]})")
    if prog in _WRITERS or prog == "patch" or (prog == "sed" and any(a.startswith(("-i", "--in-place"))
                                                                   or (a[:1] == "-" and "i" in a[1:2]) for a in flags)):
        places += [p for a in args for p in embedded_paths(a)]
    for place in places:
        why = _runs_later(place, root)
        if why:
            r.add(HIGH, f"writes {place}: {why}")
            break


def _rate_git_config(args: list[str], root: str, r: _Ratings) -> None:
    """`git config` that sets a key which runs a program (core.pager, core.fsmonitor, alias.x=!cmd, ...), or writes
    your global configuration: high. Other configuration writes: medium. Reads: nothing."""
    change = config_write(args)
    if change is None:
        return
    if change.runs:
        r.add(HIGH, f"sets git configuration that runs a program ({change.runs})")
    if change.scope in ("global", "system"):
        r.add(HIGH, f"changes your {change.scope} git configuration, which every repository reads")
    elif change.file is not None and (_outside(change.file, root) or _runs_later(change.file, root)):
        r.add(HIGH, f"changes a git configuration file ({change.file})")
    r.add(MEDIUM, "changes git configuration")


def _runs_later(place: str, root: str) -> str:
    """Why a write to this path would run code later (shell start-up files, .git, ~/.ssh, ...); '' when not."""
    path = _home_expanded(place)
    if not path:
        return ""
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(root, path))
    real = full
    if len(full) < 4096:  # PATH_MAX: a longer path cannot be opened, and resolving it costs time per component
        try:
            real = os.path.realpath(full)  # a symlink in the workspace to .git/hooks is .git/hooks
        except (OSError, ValueError):
            pass
    for candidate in dict.fromkeys((full, real)):
        parts = candidate.split(os.sep)
        for i, part in enumerate(parts):
            if part in _CODE_FOLDERS and (part not in _CODE_PARENTS or parts[i - 1:i] == [_CODE_PARENTS[part]]):
                if part == ".git":
                    return "git runs hooks and reads configuration from .git (core.fsmonitor, core.pager ...)"
                return f"files in {part}/ run or configure programs later"
        if parts[-1] in _STARTUP_FILES:
            return f"{parts[-1]} runs or configures programs later (start-up or configuration file)"
    return ""


def _home_expanded(word: str) -> str:
    for prefix in ("~/", "$HOME/", "${HOME}/"):
        if word.startswith(prefix):
            return os.path.join(os.path.expanduser("~"), word[len(prefix):])
    if word in ("~", "$HOME", "${HOME}"):
        return os.path.expanduser("~")
    return "" if "\x00" in word else word


def _inline_code(prog: str, args: list[str]) -> str | None:
    """The code an interpreter is given on its command line (-c, -e, -E, -r ...), or None."""
    family = "python" if prog.startswith("python") else next((k for k in _CODE_LETTERS if prog.startswith(k)), "")
    code_letters = "c" if prog in SHELLS else _CODE_LETTERS.get(family, "ce")
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            if arg.split("=", 1)[0] in ("--eval", "--print", "--command"):
                return arg.split("=", 1)[1] if "=" in arg else " ".join(args[i + 1:i + 2])
            continue
        if not arg.startswith("-") or arg == "-":
            return None  # a script file: its code is not on the command line
        letters = arg[1:]
        for k, letter in enumerate(letters):
            if letter in code_letters:
                return letters[k + 1:] or " ".join(args[i + 1:i + 2])
    return None


def _rate_nested(cmd: SimpleCommand, root: str, r: _Ratings, depth: int) -> None:
    """Commands hidden inside another command's arguments: eval, env -S, watch, find -exec."""
    prog, args = cmd.program, cmd.args
    inner: list[str] = []
    if prog == "eval":
        inner.append(" ".join(args))
    if "env" in cmd.wrappers:
        words = cmd.words
        for i, word in enumerate(words):
            if word in ("-S", "--split-string") and i + 1 < len(words):
                inner.append(words[i + 1])
            elif word.startswith("--split-string="):
                inner.append(word.split("=", 1)[1])
    if cmd.wrappers and cmd.wrappers[-1] in ("watch", "su") and len(cmd.argv) == 1 and " " in cmd.argv[0]:
        inner.append(cmd.argv[0])
    if prog in ("su", "runuser") and "-c" in args and args.index("-c") + 1 < len(args):
        inner.append(args[args.index("-c") + 1])
    for text in inner:
        for sub in parse(text).commands:
            _rate_command(sub, root, r, depth + 1)
    if prog == "find":
        for i, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
                sub = SimpleCommand(words=args[i + 1:end])
                split_wrappers(sub)
                _rate_command(sub, root, r, depth + 1)


def _outside(word: str, root: str) -> bool:
    """Whether a word, or a path inside it (--out=/etc/x, of=/dev/sda, -t/root), escapes the workspace."""
    return any(_outside_path(p, root) for p in embedded_paths(word))


def _outside_path(token: str, root: str) -> bool:
    """Whether one path escapes the workspace."""
    if "://" in token:
        return False  # a URL, rated by the network rule
    if not token or token.startswith("-"):
        return False
    if token.startswith("~") or token.startswith(("$HOME", "${HOME}")):
        return True
    if token.startswith("/"):
        if token in _SAFE_DEVICES or token.startswith("/dev/fd/"):
            return False
        real = os.path.realpath(token)
    elif ".." in Path(token).parts:
        real = os.path.realpath(os.path.join(root, token))
    else:
        return False
    return not (real == root or real.startswith(root.rstrip(os.sep) + os.sep))
