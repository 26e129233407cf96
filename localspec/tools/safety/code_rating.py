"""Danger raters for programs that run code or commands given in their arguments: interpreters, awk, sed, editors,
pagers, debuggers and the like.

The rule (docs/security.md): a program that runs a program, or code in a language this rating does not read,
given in its arguments, is high (as `tar --to-command` and `sort --compress-program` were); inline code of an
interpreter is at least medium, high when it deletes, writes or runs programs; shell code (`sh -c`) is read and
rated command by command. Each rater reads its program's options in every spelling it accepts, and an option it
does not know is a spelling it cannot vouch for: high, never low.
"""
from __future__ import annotations

import re
from typing import Callable

from localspec.tools.safety.argv_options import Reading, Syntax, read
from localspec.tools.safety.places import write_rating
from localspec.tools.safety.rating import HIGH, MEDIUM, Call
from localspec.tools.safety.sed_script import sed_effects
from localspec.tools.shell.parse import SHELLS

INTERPRETERS = SHELLS | {"python", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun",
                         "Rscript", "tclsh", "osascript", "pwsh"}
# Short flags after which an interpreter's next word (or the flag's own tail: -e'...') is code to run.
_CODE_LETTERS = {"python": "c", "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "php": "r", "lua": "e",
                 "Rscript": "e", "osascript": "e", "deno": "", "bun": "e", "pwsh": "c", "tclsh": ""}
# Inline code that deletes, overwrites or runs other programs: what we look for when we cannot rate the code.
DESTRUCTIVE_CODE = re.compile(
    r"rmtree|unlink|\bremove\s*\(|\brmdir|rm_r|rm_rf|FileUtils|rmSync|rmdirSync|\bsystem\s*\(|\bsystem\b|"
    r"subprocess|Popen|popen|child_process|execSync|spawnSync|\bexec[lv]p?e?\s*\(|os\.exec|qx|shutil\.move|"
    r"os\.rename|truncate|write_text|write_bytes|\bfork\b|\bopen\s*\([^)]*[\"'][wa+]|writeFileSync|\bkill\b|\brm\s+-",
    re.IGNORECASE)
# Script names that are the program's standard input (`python3 /dev/stdin <<< '...'`).
STDIN_NAMES = {"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}


def is_interpreter(prog: str) -> bool:
    return prog in INTERPRETERS or prog.startswith(("python", "perl", "ruby", "node", "php"))


def rate_interpreter(call: Call) -> None:
    prog, args = call.prog, call.args
    code = inline_code(prog, args)
    scripts = [a for a in call.positional if a not in STDIN_NAMES]
    from_stdin = code is None and not scripts
    fed = [target for op, target in call.cmd.redirects if op == "<<<"]  # here-strings: the code itself
    if from_stdin and fed:
        code = " ".join(fed)
    elif call.cmd.piped and from_stdin:
        call.add(HIGH, f"pipes data into a shell/interpreter to execute ({prog})")
    elif from_stdin and any("<" in op for op, _ in call.cmd.redirects):
        call.add(MEDIUM, f"runs code fed to {prog} on its input, which is not rated here")
    if code is None:
        return
    if prog in SHELLS:
        call.nested(code)
    elif DESTRUCTIVE_CODE.search(code):
        call.add(HIGH, f"runs inline {prog} code that deletes, writes or runs other programs")
    else:
        call.add(MEDIUM, f"runs inline {prog} code")


def inline_code(prog: str, args: list[str]) -> str | None:
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


# -- the raters below read options with argv_options.read and a complete Syntax: an option outside it is unknown --
def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


def _unknown(call: Call, opts: Reading) -> None:
    if opts.unknown:
        call.add(HIGH, f"has an option of {call.prog} this rating does not know ({opts.unknown[0][:40]}), which may "
                       "run or write something")


def _writes(call: Call, places: list[str], how: str) -> None:
    for place in places:
        rated = write_rating(place, call.root)
        if rated is not None:
            call.add(rated[0], f"{rated[1]} ({how})")


# -- awk ------------------------------------------------------------------------------------------------------------
_AWK = Syntax("fvFeEilW", _f("--file", "--assign", "--field-separator", "--source", "--exec", "--include", "--load"),
              _f("--characters-as-bytes", "--traditional", "--copyright", "--gen-pot", "--help", "--bignum",
                 "--non-decimal-data", "--use-lc-numeric", "--optimize", "--posix", "--re-interval", "--no-optimize",
                 "--sandbox", "--lint-old", "--version", "--csv"),
              short_flags="bcCghMnNOPrsStV", short_optional="dDLop",
              long_optional=_f("--dump-variables", "--debug", "--lint", "--pretty-print", "--profile"))
_AWK_RUNS = re.compile(r"\bsystem\s*\(|(?<!\|)\|(?!\|)|@load\b")  # system(), print | "cmd", "cmd" | getline, |&
_AWK_WRITES = re.compile(r"\bprintf?\b[^;{}\n]*>")  # print > "file", printf ... >> "file"


def rate_awk(call: Call) -> None:
    opts = read(call.args, _AWK)
    _unknown(call, opts)
    if opts.given("-l", "--load"):
        call.add(HIGH, f"loads a compiled extension into {call.prog} (-l), which runs its code")
    if opts.given("-f", "--file", "-E", "--exec", "-i", "--include") and "inplace" not in opts.values("-i",
                                                                                                  "--include"):
        call.add(MEDIUM, f"runs an {call.prog} program from a file, which is not rated here")
    _writes(call, opts.values("-d", "-D", "-o", "-p", "--dump-variables", "--debug", "--pretty-print", "--profile"),
            f"{call.prog} writes its report there")
    programs = opts.values("-e", "--source")
    files = opts.positionals
    if not opts.given("-f", "--file", "-E", "--exec", "-e", "--source") and files:
        programs, files = [files[0]], files[1:]
    if "inplace" in opts.values("-i", "--include"):
        _writes(call, files, "awk -i inplace rewrites it")
    for program in programs:
        if _AWK_RUNS.search(program):
            call.add(HIGH, f"runs an {call.prog} program that runs other programs (system(), a pipe or @load)")
        if _AWK_WRITES.search(program):
            call.add(HIGH, f"runs an {call.prog} program that writes files (print > FILE)")


# -- sed ------------------------------------------------------------------------------------------------------------
_SED = Syntax("efl", _f("--expression", "--file", "--line-length"),
              _f("--quiet", "--silent", "--debug", "--follow-symlinks", "--posix", "--regexp-extended", "--separate",
                 "--sandbox", "--unbuffered", "--null-data", "--binary", "--help", "--version"),
              short_flags="nrEsuzb", short_optional="i", long_optional=_f("--in-place"))


def rate_sed(call: Call) -> None:
    opts = read(call.args, _SED)
    _unknown(call, opts)
    if opts.given("-f", "--file"):
        call.add(MEDIUM, f"runs a {call.prog} program from a file, which is not rated here")
    scripts = opts.values("-e", "--expression")
    if not opts.given("-e", "--expression", "-f", "--file") and opts.positionals:
        scripts = [opts.positionals[0]]
    sandbox = opts.given("--sandbox")  # sed itself then refuses e, r and w
    for script in scripts:
        effects = sed_effects(script)
        if effects is None:
            call.add(HIGH, f"runs a {call.prog} program this rating cannot read, which may run or write something")
            continue
        runs, writes = effects
        if runs and not sandbox:
            call.add(HIGH, f"runs a {call.prog} program that runs commands (the e command or s///e)")
        if not sandbox:
            _writes(call, writes, f"{call.prog}'s w command")


# -- editors, pagers, debuggers: commands of their own given on the command line --------------------------------------
_VIM_MOVES = re.compile(r"^\+(\d*|/.*|\?.*)$")  # +N, +/pattern: where to start, nothing run


def rate_editor(call: Call) -> None:
    """vi, vim, nvim, ex, view: -c CMD, +CMD, --cmd CMD, -S FILE, -s FILE, -u VIMRC, --remote-send run editor
    commands, which can run programs (`:!cmd`) and write any file."""
    args = call.args
    given = [a for a in args if (a.startswith("+") and not _VIM_MOVES.match(a))]
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if arg in ("-c", "--cmd", "-S", "-s", "--remote-send", "--remote-expr") or \
                (arg.startswith("-c") and not arg.startswith("--")) or name in ("--remote-send", "--remote-expr"):
            given.append(" ".join(args[i:i + 2]))
        elif arg == "-u" and args[i + 1:i + 2] not in (["NONE"], ["NORC"], ["DEFAULTS"]):
            given.append(" ".join(args[i:i + 2]))
        elif arg in ("-w", "-W"):
            _writes(call, args[i + 1:i + 2], f"{call.prog} {arg} records keys there")
    if given:
        call.add(HIGH, f"runs {call.prog} commands given in its arguments ({given[0][:60]}), which can run programs "
                       "and write files")


def rate_emacs(call: Call) -> None:
    opts = [a for a in call.args if a.split("=", 1)[0] in ("--eval", "-l", "--load", "-f", "--funcall", "--script",
                                                            "-x", "--execute", "-batch", "--batch")]
    if any(a.split("=", 1)[0] not in ("-batch", "--batch") for a in opts):
        call.add(HIGH, f"runs Emacs Lisp given in its arguments ({opts[0]}), which can run programs and write files")


_LESS_MOVES = re.compile(r"^\+\+?(\d*[gGFpjkeyfbdu%]?|[/?&].*|:[nx])$")


def rate_pager(call: Call) -> None:
    """less, more, most: +CMD runs a pager command (`less +'!cmd'` runs cmd); -o/-O FILE log to a file; -k FILE
    loads key bindings, which can run commands."""
    args = call.args
    for i, arg in enumerate(args):
        if arg.startswith("+") and not _LESS_MOVES.match(arg):
            call.add(HIGH, f"runs a {call.prog} command given in its arguments ({arg[:60]}), which can run programs")
            if arg.lstrip("+").startswith("!"):
                call.nested(arg.lstrip("+")[1:])
        name = arg.split("=", 1)[0]
        if name in ("-o", "-O", "--log-file", "--LOG-FILE") or (arg[:2] in ("-o", "-O") and len(arg) > 2):
            target = arg.split("=", 1)[1] if "=" in arg else (arg[2:] if len(arg) > 2 and arg[1] in "oO"
                                                             and not arg.startswith("--") else " ".join(args[i + 1:i + 2]))
            _writes(call, [target] if target else [], f"{call.prog} logs its input there")
        if name in ("-k", "--lesskey-file", "--lesskey-src", "--lesskey-content") or \
                (arg.startswith("-k") and len(arg) > 2):
            call.add(HIGH, f"loads {call.prog} key bindings given in its arguments, which can run commands")


_MAN = Syntax("PCMSsLmpEeRTX", _f("--pager", "--config-file", "--manpath", "--sections", "--locale", "--systems",
                                 "--preprocessor", "--encoding", "--extension", "--recode"),
              _f("--all", "--whatis", "--apropos", "--local-file", "--where", "--path", "--location", "--catman",
                 "--regex", "--wildcard", "--names-only", "--ignore-case", "--match-case", "--no-subpages",
                 "--no-hyphenation", "--no-justification", "--update", "--debug", "--default", "--help", "--usage",
                 "--version", "--troff", "--ditroff", "--gxditview", "--troff-device"),
              short_flags="fkKwWlabcdDtZiIaUuhV", short_optional="H", long_optional=_f("--html"))


def rate_man(call: Call) -> None:
    opts = read(call.args, _MAN)
    _unknown(call, opts)
    pager = opts.values("-P", "--pager") + opts.values("-H", "--html")
    if pager or opts.given("-C", "--config-file"):
        what = pager[0][:60] if pager else "a configuration file, which can name one"
        call.add(HIGH, f"runs a program given in its arguments as {call.prog}'s pager or browser ({what})")
        for command in pager:
            call.nested(command)


def rate_debugger(call: Call) -> None:
    """gdb and lldb run commands of their own given in their arguments (`gdb -batch -ex 'shell id'`), and the
    program they debug."""
    runs = ("-ex", "--ex", "-eval-command", "--eval-command", "-x", "--x", "-command", "--command", "-iex", "--iex",
            "-init-eval-command", "--init-eval-command", "-ix", "--ix", "-init-command", "--init-command",
            "-o", "--one-line", "-s", "--source", "-O", "--one-line-before-file", "-S", "--source-before-file",
            "-k", "--one-line-on-crash", "-K", "--source-on-crash")
    given = [a for a in call.args if a.split("=", 1)[0] in runs]
    if given:
        call.add(HIGH, f"runs {call.prog} commands given in its arguments ({given[0]}), which can run programs")
    else:
        call.add(MEDIUM, f"debugs a program and can run it ({call.prog})")


def rate_zip(call: Call) -> None:
    given = [a for a in call.args if a == "-TT" or a.startswith("-TT") or a.split("=", 1)[0] == "--unzip-command"
             or (a.startswith("--unzip") and len(a) >= 7)]
    if given:
        call.add(HIGH, f"runs the command given to test the archive ({given[0][:60]})")


_SCRIPT = Syntax("cEIOBTmo", _f("--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing",
                                 "--logging-format", "--output-limit"),
                 _f("--append", "--return", "--flush", "--force", "--quiet", "--timing", "--help", "--version"),
                 short_flags="aefqthV")


def rate_script(call: Call) -> None:
    """script -c CMD (-qc, --command=CMD) runs CMD in a shell; its log goes to the file named last."""
    opts = read(call.args, _SCRIPT)
    _unknown(call, opts)
    for command in opts.values("-c", "--command"):
        call.add(HIGH, f"runs a command line given in its arguments ({call.prog} -c)")
        call.nested(command)
    _writes(call, opts.positionals[-1:] + opts.values("-I", "--log-in", "-O", "--log-out", "-B", "--log-io", "-T",
                                                     "--log-timing"), f"{call.prog} logs the session there")


def rate_sg(call: Call) -> None:
    """sg GROUP [-c] CMD: runs CMD with another group's rights (root's, for `sg root -c ...`)."""
    words = call.args
    group = words[0] if words else ""
    call.add(HIGH, f"runs a command with the rights of group {group!r} ({call.prog})")
    rest = words[1:]
    if rest[:1] == ["-c"]:
        rest = rest[1:]
    if rest:
        call.nested(" ".join(rest))


def rate_switch_user(call: Call) -> None:
    """su, runuser: run a command (`-c CMD`, or after `-u USER`) as another user."""
    call.add(HIGH, f"runs with elevated privileges or as another user ({call.prog})")
    args = call.args
    if "-c" in args and args.index("-c") + 1 < len(args):
        call.nested(args[args.index("-c") + 1])
    for i, arg in enumerate(args):
        if arg in ("-u", "--user") and i + 2 < len(args):
            rest = args[i + 2:]
            call.nested(rest[1:] if rest[:1] == ["--"] else rest)
            break


def code_raters() -> dict[str, Callable[[Call], None]]:
    """This module's raters by program name (tools/safety/programs.py merges them into the table)."""
    table: dict[str, Callable[[Call], None]] = {}
    for names, rater in ((("awk", "gawk", "mawk", "nawk"), rate_awk), (("sed", "gsed"), rate_sed),
                         (("vi", "vim", "nvim", "gvim", "ex", "view", "rvim", "rview", "vimdiff", "evim"), rate_editor),
                         (("emacs", "emacsclient"), rate_emacs), (("less", "more", "most"), rate_pager),
                         (("man",), rate_man), (("gdb", "lldb"), rate_debugger), (("zip",), rate_zip),
                         (("script",), rate_script), (("sg",), rate_sg), (("su", "runuser"), rate_switch_user)):
        for name in names:
            table[name] = rater
    return table
