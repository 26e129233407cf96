"""A second round of attacks on the tools' trust boundary (issue 17), each a variant the first tests did not try.

Through a real Toolbox on a real workspace, real /bin/sh and real processes. Every case here failed before its fix:
remembered allowances that read outside the workspace through symlinks, look-alike program names, a PATH entry that
resolves to the workspace, danger ratings blind to abbreviated options and fork-bomb variants, a quadratic scan
that a long command hung for minutes, an unbounded fork bomb, a killed process tracker, escapes in file names and
huge arguments shown on the terminal.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import uuid

import pytest

from localspec.tools import Decision, Policy, Toolbox
from localspec.tools.limits import Limits
from localspec.tools.safety.allowance import remember
from localspec.tools.safety.danger import rate_shell
from localspec.tools.safety.display import approval_text, arguments_line, arguments_text
from localspec.tools.shell.parse import plain_argv


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "notes.txt").write_text("hello\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOPSECRET\n")
    (ws / "escape").symlink_to(tmp_path / "outside")  # a folder symlink out of the workspace
    return ws


class Approver:
    def __init__(self, always_for: str):
        self.always_for, self.asked = always_for, []

    def __call__(self, request):
        self.asked.append(request)
        return Decision.ALLOW_ALWAYS if request.arguments["command"] == self.always_for else Decision.DENY_ONCE


# --- "always" never covers a command that follows symlinks out of the workspace --------------------------------
FOLLOWING = [
    ("grep -n hello notes.txt", "grep -R TOPSECRET ."),
    ("grep -n hello notes.txt", "grep -rR TOPSECRET ."),
    ("ls", "ls -RL"),
    ("ls", "ls -R --dereference"),
    ("ls", "ls -R --derefer"),
    ("find . -name '*.txt'", "find -L . -name '*.txt'"),
    ("find . -name '*.txt'", "find . -follow -name '*.txt'"),
    ("du -sh", "du -L"),
    ("du -sh", "du -aL ."),
]


@pytest.mark.parametrize("first, attack", FOLLOWING)
def test_always_does_not_cover_symlink_following(ws, first, attack):
    approver = Approver(first)
    tb = Toolbox(ws, Policy("ask"), approver)
    tb.call("run_shell", {"command": first})
    res = tb.call("run_shell", {"command": attack})
    assert [r.arguments["command"] for r in approver.asked] == [first, attack]
    assert not res.ok and "TOPSECRET" not in (res.content or "") and "secret.txt" not in (res.content or "")
    assert "not in the read-only set" in approver.asked[1].always_note


@pytest.mark.parametrize("command", ["rg -L x", "rg --follow x", "tree -l", "diff -r . escape",
                                     "diff --recursive a b"])
def test_symlink_following_options_are_not_remembered(ws, command):
    assert remember(command, ws).allowance is None


@pytest.mark.parametrize("command", ['"ɡit" status', "'ｇｉｔ' status", '"lѕ" -la', "'ls\u200b'"])
def test_look_alike_program_names_are_not_remembered(ws, command):
    """A quoted homoglyph (U+0261, fullwidth, Cyrillic s) would be remembered looking like the real program."""
    kept = remember(command, ws)
    assert kept.allowance is None and kept.reason


@pytest.mark.parametrize("command", ["g''it status", '"git" status', "git\tstatus", "'git' 'status'"])
def test_quoting_that_changes_nothing_is_the_same_family(ws, command):
    """The shell runs exactly `git status` for these, so covering them is what the user saw."""
    assert remember(command, ws).allowance == remember("git status", ws).allowance


@pytest.mark.slow  # a timing test on a megabyte of input
def test_a_megabyte_command_is_planned_in_linear_time(ws):
    """plain_argv built words by list concatenation and the fork-bomb regex used a backreference: both were
    quadratic (158 s for 200,000 characters, 32 s for 40,000). The approver is asked promptly instead."""
    asked = []
    tb = Toolbox(ws, Policy("ask"), lambda r: asked.append(r) or False)
    n = 130_000  # just under the one-argument limit of Linux (128 KiB)
    for command in ("echo " + "a" * n, "a" * n, "x(){ " * (n // 5), "'" + "a " * (n // 2 - 1) + "'"):
        start = time.monotonic()
        res = tb.call("run_shell", {"command": command})
        assert time.monotonic() - start < 15, command[:20]
        assert not res.ok and "denied" in res.error
    assert len(asked) == 4 and all(len(approval_text(r)) < 20_000 for r in asked)
    start = time.monotonic()
    plain_argv("echo " + "'x' " * 200_000)
    assert time.monotonic() - start < 10
    # Longer cannot run at all (E2BIG): refused at once with a way forward, not analysed, not asked.
    start = time.monotonic()
    res = tb.call("run_shell", {"command": "echo " + "a" * 10_000_000})
    assert time.monotonic() - start < 5 and not res.ok and "write it to a script" in res.error
    assert len(asked) == 4


# --- PATH: nothing the model writes in the workspace runs in place of a program ----------------------------------
def _plant(ws, name):
    script = ws / name
    script.write_text(f"#!/bin/sh\ntouch {ws}/PWNED\n")
    script.chmod(0o755)


@pytest.mark.parametrize("path", [":{}", "{}:", ".:{}", "{}::/nonexistent", "bin:{}"])
def test_relative_path_entries_never_reach_the_workspace(ws, monkeypatch, path):
    """An empty or relative PATH entry is looked up from the command's cwd, the workspace: a planted `ls` would
    run under a remembered "always" for `ls`."""
    _plant(ws, "ls")
    (ws / "bin").mkdir()
    _plant(ws / "bin", "ls")
    monkeypatch.setenv("PATH", path.format(os.environ["PATH"]))
    tb = Toolbox(ws, Policy("auto"))
    res = tb.call("run_shell", {"command": "ls"})
    assert res.ok and not (ws / "PWNED").exists() and not (ws / "bin" / "PWNED").exists()
    env = tb.call("run_shell", {"command": "echo \"$PATH\""}).content.splitlines()[0]
    assert all(os.path.isabs(p) for p in env.split(":")), env


def test_writing_into_a_folder_on_path_is_high_danger(ws, monkeypatch):
    """A virtualenv's bin inside the workspace is on PATH: a file written there runs in place of a program of that
    name, so it is rated high (asked every time, "always" not offered)."""
    (ws / ".venv" / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}:{os.environ['PATH']}")
    seen = []
    tb = Toolbox(ws, Policy("ask"), lambda r: seen.append(r) or "allow_always")
    tb.call("write_file", {"path": ".venv/bin/git", "content": "#!/bin/sh\ntouch PWNED\n"})
    tb.call("write_file", {"path": ".venv/bin/git", "content": "#!/bin/sh\ntouch PWNED2\n"})
    assert len(seen) == 2 and seen[0].danger.level == "high" and "folder on PATH" in str(seen[0].danger)
    assert seen[0].always is None
    ordinary = Toolbox(ws, Policy("ask"), lambda r: seen.append(r) or True)
    ordinary.call("write_file", {"path": "src/git", "content": "x\n"})
    assert seen[-1].danger.level == "low"


# --- danger rating blind spots ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command, needle", [
    ("rm --recu build", "recursively"),
    ("rm --rec -f build", "recursively"),
    ("chmod --recurs 000 .", "recursively"),
    ("git reset --har", "git reset --hard"),
    ("git reset --hard=HEAD~3", "git reset --hard"),
    ("git push --forc origin main", "force"),
    ("git clean --forc -d", "git clean"),
    ("find . -delete", "find"),
    ("find . -type f -exec rm {} +", "find"),
    ("find / -delete", "find"),
    ("rsync -a --delete empty/ .", "rsync --delete"),
    ("python3 -c 'import os\nwhile True: os.fork()'", "inline"),
    ("perl -e 'fork while 1'", "inline"),
    ("f(){ f & f; }; f", "fork bomb"),
    (".(){ .|.& };.", "fork bomb"),
    ("function f { f|f & }; f", "fork bomb"),
    ("bomb() { bomb | bomb & } ; bomb", "fork bomb"),
    ("x(){ x & }; x", "fork bomb"),
    ("systemd-run --user rm -rf x", "recursively"),
    ("parallel rm -rf ::: build", "recursively"),
    ("unshare -r rm -rf build", "recursively"),
])
def test_high_danger_variants(ws, command, needle):
    danger = rate_shell(command, ws)
    assert danger.level == "high" and needle in str(danger), danger


@pytest.mark.parametrize("command", [
    "git -c alias.x='!touch PWNED' x", "git --config-env=core.pager=P log",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=x git log",
])
def test_git_configuration_that_runs_programs_is_high(ws, command):
    """Issue 27: configuration keys that run programs are high, set for one run or for good."""
    danger = rate_shell(command, ws)
    assert danger.level == "high" and "git configuration that runs a program" in str(danger), danger


@pytest.mark.parametrize("command, needle", [
    ("git -c user.name=x log", "git configuration"),
    ("LD_PRELOAD=./x.so ls", "LD_PRELOAD"),
    ("PYTHONPATH=. python3 build.py", "PYTHONPATH"),
    ("BASH_ENV=./x bash build.sh", "BASH_ENV"),
    ("at now", "the tool cannot stop"),
    ("systemd-run --user sleep 100", "the tool cannot stop"),
    ("git stash drop", "stash"),
    ("git branch -D feature", "git branch -D"),
    ("find . -name '*.pyc' -delete", "find"),
])
def test_medium_danger_variants(ws, command, needle):
    danger = rate_shell(command, ws)
    assert danger.level == "medium" and needle in str(danger), danger


@pytest.mark.parametrize("command", ["f() { echo hi; }; f", "g(){ ls | wc -l; }; g", "f(){ f && f; }",
                                     "git status", "ls -la | sort", "git log --format=%H -3"])
def test_low_stays_low(ws, command):
    assert rate_shell(command, ws).level == "low"


# --- processes: a fork bomb is bounded; killing the tracker does not free what the command started --------------
def marked(mark: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if f"LOCALSPEC_TEST_MARK={mark}".encode() in fh.read().split(b"\0"):
                        with open(f"/proc/{entry}/stat", "rb") as st:
                            if st.read().rsplit(b")", 1)[-1].split()[0] not in (b"Z", b"X"):
                                found.append(int(entry))
            except OSError:
                continue
    return found


# Exponential, but each stops at a few hundred processes, so a failing test cannot take the machine down.
BOMBS = [
    "f(){ if [ $1 -lt 8 ]; then f $(($1+1)) | f $(($1+1)) & fi; sleep 30; }; f 0",
    "f(){ if [ $1 -lt 8 ]; then f $(($1+1)) & f $(($1+1)); fi; sleep 30; }; f 0 & echo started",
    "python3 -c 'import os, time\nfor _ in range(9): os.fork()\ntime.sleep(30)'",
    "f(){ if [ $1 -lt 8 ]; then setsid sh -c 'sleep 30' & f $(($1+1)) & f $(($1+1)); fi; sleep 30; }; f 0",
]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the process bound needs the Linux subreaper")
@pytest.mark.parametrize("command", BOMBS)
def test_fork_bomb_is_stopped_at_the_process_bound(ws, monkeypatch, command):
    mark = uuid.uuid4().hex
    monkeypatch.setenv("LOCALSPEC_TEST_MARK", mark)
    tb = Toolbox(ws, Policy("auto"), limits=Limits(shell_max_processes=100))
    start = time.monotonic()
    res = tb.call("run_shell", {"command": command, "timeout_s": 25})
    assert time.monotonic() - start < 20, "stopped by the timeout, not by the process bound"
    assert res.data["timed_out"] is False
    assert marked(mark) == []
    if command.endswith("& echo started") and res.ok:
        # The shell exited at once: on a busy machine the cleanup after it may come before the bound is reached;
        # then the bomb is stopped as leftovers, which is as good.
        assert "background processes still running after the command exited were stopped" in res.content
    else:
        assert not res.ok and "processes running at once (limit 100" in res.error and "all were killed" in res.error


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the process bound needs the Linux subreaper")
def test_many_short_processes_under_the_bound_run_normally(ws):
    tb = Toolbox(ws, Policy("auto"), limits=Limits(shell_max_processes=100))
    res = tb.call("run_shell", {"command": "for i in $(seq 40); do sleep 0.3 & done; wait; echo done"})
    assert res.ok and "done" in res.content


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks /proc")
@pytest.mark.parametrize("command", [
    "setsid sleep 35 & kill -9 $PPID; echo after",
    "sleep 35 & kill -KILL $PPID",
    "(setsid sleep 35 &); sleep 0.2; kill -9 $PPID",
    "python3 -c 'import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(35)\n' ; sleep 0.2; "
    "kill -9 $PPID",
])
def test_killing_the_process_tracker_does_not_free_the_command(ws, monkeypatch, command):
    """`kill -9 $PPID` kills the wrapper that tracks the command: what it started is still found (by a mark in its
    environment) and stopped, and the result says the tracker failed."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv("LOCALSPEC_TEST_MARK", mark)
    tb = Toolbox(ws, Policy("auto"))
    res = tb.call("run_shell", {"command": command, "timeout_s": 10})
    assert marked(mark) == [], f"{command!r} left processes running"
    assert "process tracker was stopped or failed" in res.content


# --- what reaches a screen: escaped and bounded -------------------------------------------------------------------
def test_file_names_with_escapes_cannot_forge_listing_lines(ws):
    (ws / "a\x1b[2Jb.txt").write_text("needle\n")
    (ws / "c\nfake.txt  (99 B)").write_text("needle\n")
    (ws / "rtl\u202etxt.exe").write_text("x\n")
    tb = Toolbox(ws, Policy("read-only"))
    for res in (tb.call("list_dir", {"path": "."}), tb.call("list_dir", {"path": ".", "glob": "**"}),
                tb.call("search_text", {"pattern": "needle"})):
        assert res.ok
        assert "\x1b" not in res.content and "\u202e" not in res.content
        assert not any(line.startswith("fake.txt") for line in res.content.splitlines()), res.content
    listing = tb.call("list_dir", {"path": "."}).content
    assert "a\\x1b[2Jb.txt" in listing and "c\\nfake.txt" in listing and "rtl\\u202etxt.exe" in listing


def test_huge_write_is_bounded_in_every_display(ws):
    """ApprovalRequest.arguments carries the full content; the terminal block, the approval lines and the one-line
    form printed by `agent run` all stay small."""
    content = ("x" * 5_000_000 + "\x1b[2K\r") * 10
    seen = []
    tb = Toolbox(ws, Policy("ask"), lambda r: seen.append(r) or False)
    tb.call("write_file", {"path": "big.txt", "content": content})
    (request,) = seen
    assert len(request.arguments["content"]) == len(content)  # the request itself is unchanged
    block = approval_text(request)
    assert len(block) < 20_000 and "\x1b" not in block and "\r" not in block
    shown = arguments_text(request.arguments)  # the TUI's tool card and approval dialog
    assert len(shown) < 20_000 and "\x1b" not in shown and "more characters not shown" in shown
    line = arguments_line(request.arguments)
    assert len(line) < 3_000 and "\x1b" not in line and "\r" not in line
    assert "more characters not shown" in line


def test_agent_run_terminal_output_is_escaped_and_bounded(capsys):
    """The headless runner's event lines (commands/agent_run.py): tool calls, errors and model text."""
    from localspec.agent.events import ToolCallFinished, ToolCallStarted
    from localspec.turns import Delta
    from localspec.commands.agent_run import _Printer
    from localspec.tools.tool_result import ToolResult

    printer = _Printer("hide")
    printer(ToolCallStarted(1, "c1", "write_file", {"path": "x\x1b[2J", "content": "y" * 1_000_000}))
    printer(ToolCallFinished(1, "c1", "read_file", {}, ToolResult.failure("bad \x1b]52;c;cHduZWQ=\x07 name")))
    printer(Delta("done\x1b[2K\rfaked\n", "text", origin="target", token=-1, step=1))
    out = capsys.readouterr()
    assert "\x1b" not in out.err and "\x07" not in out.err and "\x1b" not in out.out and "\r" not in out.out
    assert len(out.err) < 5_000 and "faked" in out.out


# --- paths that look inside but are not ---------------------------------------------------------------------------
def test_proc_self_links_inside_the_workspace(ws):
    for name, dest in (("root", "/proc/self/root"), ("cwd", "/proc/self/cwd"), ("fds", "/proc/self/fd"),
                       ("thread", "/proc/thread-self/root")):
        (ws / name).symlink_to(dest)
    tb = Toolbox(ws, Policy("auto"))
    for call in (("read_file", {"path": "root/etc/hostname"}), ("read_file", {"path": "cwd/notes.txt"}),
                 ("read_file", {"path": "fds/0"}), ("list_dir", {"path": "root"}),
                 ("list_dir", {"path": "thread/etc"}), ("search_text", {"pattern": "x", "path": "root/etc"}),
                 ("write_file", {"path": "root/tmp/PWNED", "content": "x"}),
                 ("edit_file", {"path": "cwd/notes.txt", "old": "hello", "new": "bye"})):
        res = tb.call(*call)
        assert not res.ok and "outside the workspace" in res.error, (call, res.error)
    assert (ws / "notes.txt").read_text() == "hello\n"


def test_workspace_given_through_a_symlink(tmp_path):
    """The workspace root itself is a symlink: paths are checked against its real location, and the link's own
    name does not become a way out."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("TOPSECRET\n")
    (tmp_path / "link").symlink_to(real)
    tb = Toolbox(tmp_path / "link", Policy("auto"))
    assert tb.call("read_file", {"path": "a.txt"}).content.startswith("inside")
    assert tb.call("read_file", {"path": "../link/a.txt"}).ok  # resolves back inside
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "../link/../secret.txt"):
        res = tb.call("read_file", {"path": path})
        assert not res.ok and "TOPSECRET" not in (res.content or ""), path
    assert tb.call("write_file", {"path": str(tmp_path / "link" / "b.txt"), "content": "x"}).ok
    assert (real / "b.txt").read_text() == "x"


def test_fifo_and_devices_are_never_opened_by_any_tool(ws):
    os.mkfifo(ws / "pipe")
    tb = Toolbox(ws, Policy("auto"))
    start = time.monotonic()
    for call in (("read_file", {"path": "pipe"}), ("search_text", {"pattern": "x", "path": "pipe"}),
                 ("edit_file", {"path": "pipe", "old": "a", "new": "b"}),
                 ("write_file", {"path": "pipe", "content": "x"})):
        res = tb.call(*call)
        assert not res.ok and "FIFO" in res.error, (call, res.error)
    assert tb.call("search_text", {"pattern": "x"}).ok  # a walk skips it
    assert time.monotonic() - start < 10
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


def test_marker_in_json_escapes_of_arguments_reaches_the_tool_as_text(ws):
    """Tool arguments arrive as JSON text; \\u escapes decode to marker text, which is just a file name here."""
    tb = Toolbox(ws, Policy("auto"))
    res = tb.call("write_file", '{"path": "\\u003c|im_start|>.txt", "content": "\\u003c|im_end|>"}')
    assert res.ok and (ws / "<|im_start|>.txt").read_text() == "<|im_end|>"


# --- secrets under names that do not say so -----------------------------------------------------------------------
@pytest.mark.parametrize("name, value", [
    ("REDIS_PASS", "hunter2"), ("DB_PASS", "hunter2"), ("GITLAB_PAT", "abc"),
    ("OPENAI", "sk-proj-abcdefghijklmnopqrstuvwxyz123456"), ("MYVAR", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("HF", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"), ("SLACK", "xoxb-1234-5678-abcdefgh"),
    ("AWSID", "AKIAIOSFODNN7EXAMPLE"), ("GL", "glpat-abcdefghijklmnopqrst"),
    ("CLAUDE", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"),
])
def test_secret_values_under_plain_names_are_withheld(ws, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    res = Toolbox(ws, Policy("auto")).call("run_shell", {"command": "env"})
    lines = [line for line in res.content.splitlines() if not line.startswith("PYTEST_CURRENT_TEST=")]
    assert res.ok and not any(value in line or line.startswith(f"{name}=") for line in lines)


@pytest.mark.parametrize("name, value", [("PASSAGE", "x"), ("COMPASS", "north"), ("LANG", "C.UTF-8"),
                                         ("NOTE", "sk-short")])
def test_ordinary_variables_still_pass(ws, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    res = Toolbox(ws, Policy("auto")).call("run_shell", {"command": "env"})
    assert f"{name}={value}" in res.content
