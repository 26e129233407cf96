"""What "allow always" remembers for a shell command, and which later commands it covers.

Rule: an allowance covers only a plain argv (shellparse.plain_argv: no assignments, redirections, substitutions,
chaining, globs, wrappers) that matches it:
- read-only programs in SAFE (ls, cat, grep, git status, ...) are remembered as a family: the same program (and
  subcommand) with options from its known-safe set and arguments that stay inside the workspace;
- any other program is remembered as its exact argv, so "python3 build.py" never covers "python3 -c ...";
- everything else (wrappers like env/sudo/xargs, inline code, eval, high danger, options outside the safe set
  of a SAFE program) is not remembered at all: "always" is not offered and the command is asked about each time.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from localspec.tools.safety.argv_options import embedded_paths
from localspec.tools.shell.parse import SHELLS, WRAPPERS, plain_argv


@dataclass(frozen=True)
class Safe:
    """The options under which a read-only program stays read-only."""
    short: str = ""  # short option letters that may be clustered (-la)
    short_values: str = ""  # short options that take a value (-n 5, -n5)
    long: frozenset[str] = frozenset()  # --name or --name=value (find-style "-name" for find)
    long_values: frozenset[str] = frozenset()  # long options whose value is the next word
    any_option: bool = False  # no option of this program writes, deletes or runs anything
    positionals: int | None = None  # how many non-option words are allowed; None = any
    numeric: bool = False  # head -20, git log -3
    # With any_option: options still refused (ls -L follows symlinks out of the workspace when listing -R).
    forbid_short: str = ""
    forbid_long: frozenset[str] = frozenset()


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_GREP = Safe(short="EFGPivwxcLlnohHsqrabIzZUTy", short_values="efmABCdD",
             long=_f("--extended-regexp", "--fixed-strings", "--basic-regexp", "--perl-regexp", "--regexp", "--file",
                     "--ignore-case", "--no-ignore-case", "--word-regexp", "--line-regexp", "--count", "--color",
                     "--colour", "--files-without-match", "--files-with-matches", "--max-count", "--only-matching",
                     "--quiet", "--silent", "--no-messages", "--byte-offset", "--with-filename", "--no-filename",
                     "--label", "--line-number", "--initial-tab", "--null", "--null-data", "--after-context",
                     "--before-context", "--context", "--text", "--binary-files", "--recursive",
                     "--include", "--exclude", "--exclude-dir", "--invert-match"))
_HEAD = Safe(short="qv", short_values="nc", long=_f("--lines", "--bytes", "--quiet", "--silent", "--verbose"),
             numeric=True)
_LOG_OPTS = _f("--oneline", "--graph", "--decorate", "--no-decorate", "--all", "--stat", "--shortstat", "--numstat",
               "--name-only", "--name-status", "--patch", "--no-patch", "--reverse", "--no-merges", "--merges",
               "--first-parent", "--follow", "--format", "--pretty", "--abbrev-commit", "--date", "--since",
               "--until", "--after", "--before", "--author", "--committer", "--grep", "--max-count", "--skip",
               "--no-color", "--color", "--source", "--topo-order", "--date-order", "--left-right", "--summary",
               "--word-diff", "--abbrev", "--branches", "--tags", "--remotes", "--invert-grep", "--regexp-ignore-case",
               "--no-abbrev-commit", "--full-history", "--simplify-merges", "--ancestry-path", "--no-renames",
               "--relative-date", "--ignore-all-space", "--ignore-space-change", "--unified")
_DIFF_OPTS = _f("--stat", "--shortstat", "--numstat", "--name-only", "--name-status", "--cached", "--staged",
                "--no-color", "--color", "--word-diff", "--exit-code", "--quiet", "--ignore-all-space",
                "--ignore-space-change", "--ignore-blank-lines", "--unified", "--no-renames", "--find-renames",
                "--patch", "--no-patch", "--summary", "--dirstat", "--diff-filter", "--minimal", "--patience",
                "--histogram", "--relative", "--merge-base", "--abbrev", "--no-ext-diff", "--no-textconv")
_GIT: dict[str, Safe] = {
    "status": Safe(short="sbvz", short_values="u", long=_f("--short", "--branch", "--porcelain", "--long", "--verbose",
                                          "--untracked-files", "--ignored", "--ignore-submodules", "--no-renames",
                                          "--renames", "--show-stash", "--ahead-behind", "--no-ahead-behind",
                                          "--column", "--no-column")),
    "log": Safe(short="psuwi", short_values="nGS", long=_LOG_OPTS, numeric=True),
    "show": Safe(short="psuw", long=_LOG_OPTS, numeric=True),
    "diff": Safe(short="RwbuM", short_values="U", long=_DIFF_OPTS),
    "branch": Safe(short="arv", long=_f("--list", "--all", "--remotes", "--verbose", "--show-current",
                                        "--merged", "--no-merged", "--contains", "--no-contains", "--sort",
                                        "--format", "--no-color", "--color", "--column", "--no-column"),
                   positionals=0),
    "tag": Safe(short="l", short_values="n", long=_f("--list", "--sort", "--contains", "--points-at", "--format",
                                                     "--column", "--no-column"), positionals=0),
    "remote": Safe(short="v", long=_f("--verbose"), positionals=0),
    "rev-parse": Safe(short="q", long=_f("--show-toplevel", "--abbrev-ref", "--short", "--git-dir",
                                         "--is-inside-work-tree", "--verify", "--symbolic-full-name", "--quiet",
                                         "--show-prefix", "--show-cdup", "--absolute-git-dir")),
    "ls-files": Safe(short="cdmoiszt", short_values="x", long=_f("--cached", "--deleted", "--modified", "--others",
                                                                "--ignored", "--stage", "--exclude-standard",
                                                                "--directory", "--full-name", "--error-unmatch",
                                                                "--exclude")),
    "blame": Safe(short="wesltfnp", short_values="L", long=_f("--porcelain", "--line-porcelain", "--date",
                                                            "--show-name", "--show-number", "--root")),
}
_GIT_SAFE_GLOBALS = {"--no-pager"}
_PYTEST = Safe(short="qvxsl", short_values="kmr",
               long=_f("--quiet", "--verbose", "--exitfirst", "--tb", "--maxfail", "--lf", "--last-failed", "--ff",
                       "--failed-first", "--co", "--collect-only", "--no-header", "--showlocals", "--durations",
                       "--capture", "--color", "--strict-markers", "--no-summary", "--disable-warnings", "--sw",
                       "--stepwise", "--new-first", "--nf", "--runxfail"))
_FIND_SAFE = _f("-name", "-iname", "-type", "-path", "-ipath", "-wholename", "-iwholename", "-maxdepth",
                "-mindepth", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer", "-print",
                "-print0", "-printf", "-not", "-o", "-a", "-and", "-or", "-empty", "-regex", "-iregex",
                "-regextype", "-perm", "-user", "-group", "-links", "-samefile", "-lname", "-ilname", "-readable",
                "-writable", "-executable", "-prune", "-depth", "-xdev", "-mount", "-true", "-false", "-ls",
                "-H", "-P", "-nouser", "-nogroup", "-inum", "-uid", "-gid")
SAFE: dict[str, Safe] = {
    "echo": Safe(any_option=True),
    "printf": Safe(short="", positionals=None),
    "pwd": Safe(short="LP", positionals=0),
    # Options that follow symlinks while recursing (ls -RL, grep -R, rg -L, find -L, du -L, tree -l, diff -r) are
    # left out: a symlink inside the workspace would let a remembered command read folders outside it.
    "ls": Safe(any_option=True, forbid_short="L", forbid_long=_f("--dereference")),
    "cat": Safe(short="AbeEnstTuv", long=_f("--number", "--number-nonblank", "--show-all", "--show-ends",
                                             "--show-tabs", "--squeeze-blank", "--show-nonprinting")),
    "head": _HEAD,
    "tail": _HEAD,
    "wc": Safe(short="lwcmL", long=_f("--lines", "--words", "--bytes", "--chars", "--max-line-length")),
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP,
    "rg": Safe(short="nNiIlcwvFSsuHoqx0.", short_values="egtTABCmM",
               long=_f("--line-number", "--no-line-number", "--ignore-case", "--case-sensitive", "--smart-case",
                       "--files-with-matches", "--files-without-match", "--count", "--word-regexp",
                       "--invert-match", "--fixed-strings", "--hidden", "--no-ignore", "--glob",
                       "--iglob", "--type", "--type-not", "--after-context", "--before-context", "--context",
                       "--max-count", "--max-columns", "--max-depth", "--files", "--json", "--no-heading",
                       "--heading", "--with-filename", "--no-filename", "--only-matching", "--quiet", "--regexp",
                       "--multiline", "--sort", "--stats", "--vimgrep", "--color", "--trim", "--type-list",
                       "--line-regexp", "--unrestricted", "--max-filesize")),
    "du": Safe(short="ahsckmxbP", short_values="d", long=_f("--human-readable", "--summarize", "--max-depth",
                                                           "--all", "--apparent-size", "--total", "--bytes")),
    "df": Safe(short="hHTikl", long=_f("--human-readable", "--print-type", "--inodes", "--local")),
    "stat": Safe(short="Lt", short_values="c", long=_f("--format", "--dereference", "--terse")),
    "file": Safe(short="bLiz", long=_f("--brief", "--mime", "--mime-type", "--dereference")),
    "tree": Safe(short="adfiLpsughDFrtvCJ", short_values="LIP", long=_f("--noreport", "--dirsfirst", "--gitignore")),
    "which": Safe(short="a"),
    "basename": Safe(short="as", short_values="s"),
    "dirname": Safe(),
    "realpath": Safe(short="esmq", long=_f("--relative-to", "--canonicalize-existing", "--no-symlinks")),
    "readlink": Safe(short="femnq", long=_f("--canonicalize", "--canonicalize-existing")),
    "diff": Safe(short="uqNwbBiayst", short_values="UC",
                 long=_f("--unified", "--brief", "--new-file", "--ignore-all-space",
                         "--ignore-space-change", "--ignore-blank-lines", "--ignore-case", "--text",
                         "--side-by-side", "--color", "--exclude", "--report-identical-files", "--strip-trailing-cr")),
    "cmp": Safe(short="lsb"),
    "sort": Safe(short="bdfgiMhnRrVusc", short_values="kt",
                 long=_f("--numeric-sort", "--reverse", "--unique", "--human-numeric-sort", "--version-sort",
                         "--ignore-case", "--key", "--field-separator", "--stable", "--check")),
    "uniq": Safe(short="cdiuz", short_values="fsw", positionals=1),
    "cut": Safe(short="sz", short_values="bcdf", long=_f("--delimiter", "--fields", "--characters", "--bytes")),
    "nl": Safe(short="", short_values="bnwsv"),
    "md5sum": Safe(short="cbt"), "sha1sum": Safe(short="cbt"), "sha256sum": Safe(short="cbt"),
    "sha512sum": Safe(short="cbt"),
    "uname": Safe(short="asnrvmpio", positionals=0),
    "whoami": Safe(positionals=0),
    "id": Safe(short="ugGnr"),
    "true": Safe(), "false": Safe(),
    "seq": Safe(short="w", short_values="sf"),
    "pytest": _PYTEST,
}
# Programs whose family key includes their first word (a subcommand); value: the subcommand table.
_SUBCOMMANDS: dict[str, dict[str, Safe]] = {"git": _GIT}
_INTERPRETERS = {"python", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "Rscript",
                 "osascript"} | SHELLS
# Programs whose first argument is itself a program (awk's system(), sed's e and w commands).
_CODE_ARGUMENT = {"awk", "gawk", "mawk", "nawk", "sed", "gsed", "perl", "ruby", "tclsh", "expect"}
_INLINE_CODE_FLAGS = {"-c", "-e", "-E", "-r", "-p", "-n", "--eval", "--print", "--command", "-x", "-i"}
_NEVER = {"eval", "exec", "source", ".", "command", "builtin", "alias", "export", "set", "trap", "unset", "su",
          "sudo", "doas", "pkexec", "xargs", "parallel", "env"} | set(WRAPPERS)


@dataclass(frozen=True)
class Allowance:
    """One remembered "allow always" for run_shell: a family of read-only commands, or one exact argv."""
    words: tuple[str, ...]  # program [+ subcommand] for a family; the whole argv when exact
    exact: bool

    def __str__(self) -> str:
        return shlex.join(self.words)

    def describe(self) -> str:
        """The allowance in words, for approvers."""
        shown = shlex.join(self.words)
        if self.exact:
            return f"exactly `{shown}` again (these words only: no other arguments, redirections or chaining)"
        return (f"`{shown}` with its known-safe options and arguments inside the workspace "
                "(not with redirections, variables, wildcards, other options or chained commands)")


@dataclass(frozen=True)
class Remember:
    """The outcome for one command: its allowance, or None with why "always" is not offered."""
    allowance: Allowance | None
    reason: str = ""


def remember(command: str, workspace: Path | str) -> Remember:
    """What "always" would remember for this command line."""
    plain = plain_argv(command)
    if plain.argv is None:
        return Remember(None, f"the command {plain.reason}")
    argv = list(plain.argv)
    prog = argv[0]
    if not prog.isascii():  # "ɡit" (U+0261) or fullwidth "ｇｉｔ" in quotes would be remembered looking like git
        return Remember(None, f"the program name {prog!r} has non-ASCII characters that can imitate another name")
    root = os.path.realpath(os.fspath(workspace))
    if prog in _SUBCOMMANDS:
        return _remember_subcommand(prog, argv, root)
    if prog.startswith("python") and argv[1:3] == ["-m", "pytest"]:
        why = _check(SAFE["pytest"], argv[3:], root)
        return Remember(None, f"{why} for `{prog} -m pytest`") if why else Remember(Allowance(tuple(argv[:3]), False))
    if prog in SAFE:
        why = _check(SAFE[prog], argv[1:], root)
        return Remember(None, f"{why} for `{prog}`") if why else Remember(Allowance((prog,), False))
    base = os.path.basename(prog)
    if base in _NEVER or base in SAFE or base in _SUBCOMMANDS:
        return Remember(None, f"`{base}` can run other commands or change what runs" if base in _NEVER
                        else f"`{prog}` is not the plain program name")
    if base in _CODE_ARGUMENT:
        return Remember(None, f"`{base}` runs a program given in its arguments")
    if base in _INTERPRETERS or base.startswith(("python", "perl", "ruby", "node", "php")):
        inline = [a for a in argv[1:] if _is_inline_flag(a)]
        if inline or len(argv) == 1:
            return Remember(None, f"`{base}` runs code given inline or on stdin")
    if any(_outside(a, root) for a in argv[1:]):
        return Remember(None, "an argument points outside the workspace")
    return Remember(Allowance(tuple(argv), True))


def covering(command: str, workspace: Path | str) -> Allowance | None:
    """The only allowance that may cover this command (the one "always" would remember), if any."""
    return remember(command, workspace).allowance


def _remember_subcommand(prog: str, argv: list[str], root: str) -> Remember:
    rest = argv[1:]
    while rest and rest[0] in _GIT_SAFE_GLOBALS:
        rest = rest[1:]
    if not rest:
        return Remember(None, f"`{prog}` without a subcommand")
    if rest[0].startswith("-"):
        return Remember(None, f"`{prog}` options before the subcommand ({rest[0]}) can change what it runs")
    sub, args = rest[0], rest[1:]
    safe = _SUBCOMMANDS[prog].get(sub)
    if safe is None:  # a subcommand that writes or talks to the network: the exact words only
        if any(_outside(a, root) for a in args):
            return Remember(None, "an argument points outside the workspace")
        return Remember(Allowance(tuple(argv), True))
    why = _check(safe, args, root)
    return Remember(None, f"{why} for `{prog} {sub}`") if why else Remember(Allowance((prog, sub), False))


def _check(safe: Safe, args: list[str], root: str) -> str:
    """'' when every argument is in the safe set and inside the workspace, else why not."""
    positional = 0
    i = 0
    only_positional = False
    while i < len(args):
        arg = args[i]
        i += 1
        if only_positional or arg == "-" or not arg.startswith("-"):
            positional += 1
            if safe.positionals is not None and positional > safe.positionals:
                return f"the argument {arg!r} is not allowed (it could create or write something)"
            if _outside(arg, root):
                return f"the argument {arg!r} points outside the workspace"
            continue
        if arg == "--":
            only_positional = True
            continue
        if safe.any_option:
            name = arg.partition("=")[0]
            # GNU getopt takes unique abbreviations ("--deref"): a prefix of a refused option is refused too.
            if any(f.startswith(name) for f in safe.forbid_long if name.startswith("--") and len(name) >= 4) or \
                    (not arg.startswith("--") and set(arg[1:]) & set(safe.forbid_short)):
                return f"the option {name} is not in the read-only set"
            if _outside(arg, root):
                return f"the option {arg!r} points outside the workspace"
            continue
        if safe.numeric and arg[1:].isdigit():
            continue
        if arg.startswith("--") or (safe is _FIND and arg.startswith("-")):
            name, eq, value = arg.partition("=")
            if name not in safe.long:
                return f"the option {name} is not in the read-only set"
            if eq and _outside(value, root):
                return f"the option {arg!r} points outside the workspace"
            if name in safe.long_values and not eq and i < len(args):
                if _outside(args[i], root):
                    return f"the value {args[i]!r} points outside the workspace"
                i += 1
            continue
        for k, letter in enumerate(arg[1:], start=1):
            if letter in safe.short_values:
                value = arg[k + 1:]
                if not value and i < len(args):
                    value = args[i]
                    i += 1
                if _outside(value, root):
                    return f"the value {value!r} points outside the workspace"
                break
            if letter not in safe.short:
                return f"the option -{letter} is not in the read-only set"
    return ""


_FIND = Safe(long=_FIND_SAFE,
             long_values=_f("-name", "-iname", "-type", "-path", "-ipath", "-wholename", "-iwholename", "-maxdepth",
                            "-mindepth", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer",
                            "-printf", "-regex", "-iregex", "-regextype", "-perm", "-user", "-group", "-links",
                            "-samefile", "-lname", "-ilname", "-inum", "-uid", "-gid"))
SAFE["find"] = _FIND


def _is_inline_flag(arg: str) -> bool:
    if arg in _INLINE_CODE_FLAGS or arg.startswith(("--eval", "--print", "--command")):
        return True
    return arg.startswith("-") and not arg.startswith("--") and any(c in arg[1:] for c in "ceEnpri")


def _outside(word: str, root: str) -> bool:
    """Whether a word, or a path inside it read as the danger rating reads it (`--out=/etc/x`, `-C/etc`,
    `-t/root/.ssh`: options.embedded_paths), resolves outside the workspace (symlinks followed)."""
    if not word or "\x00" in word:
        return False
    for path in embedded_paths(word):
        real = os.path.realpath(os.path.join(root, path))
        if path and not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
            return True
    return False
