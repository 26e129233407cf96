""""Allow always" covers exactly what the user saw: attacks on a remembered allowance, through a real Toolbox.

Each case: the user answers "always" to FIRST; then ATTACK (a command that, if it ran unasked, would create PWNED,
write a file, or run code) must be asked about. Whether a call needs asking is a decision made before anything
runs, so the cases check it with Toolbox.check (the approver is asked and its answer remembered as for a real call,
and nothing runs); test_issue_example_exactly runs the commands for real, to show the decision is the one call()
acts on.
"""
import subprocess

import pytest

from localspec.tools import Decision, Policy, Toolbox
from localspec.tools.safety.allowance import Allowance, remember

FIND = "find . -name '*.txt'"
BUILD = "python3 build.py"
PYTEST = "python3 -m pytest -q"

ATTACKS = [
    # --- under "always" for `git status` --------------------------------------------------------------------------
    ("git status", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch PWNED; false' "
                   "git status"),
    ("git status", "git -c core.fsmonitor='touch PWNED; false' status"),
    ("git status", "git -c core.pager='touch PWNED' status"),
    ("git status", "git --exec-path=. status"),
    ("git status", "git --exec-path"),
    ("git status", "git -C .. status"),
    ("git status", "git --git-dir=.git --work-tree=.. status"),
    ("git status", "git status; touch PWNED"),
    ("git status", "git status && touch PWNED"),
    ("git status", "git status || touch PWNED"),
    ("git status", "git status & touch PWNED"),
    ("git status", "git status | tee PWNED"),
    ("git status", "git status > PWNED"),
    ("git status", "git status >> .git/hooks/pre-commit"),
    ("git status", "git status\ntouch PWNED"),
    ("git status", "git status $(touch PWNED)"),
    ("git status", "git status `touch PWNED`"),
    ("git status", "git status <(touch PWNED)"),
    ("git status", "env GIT_DIR=x git status"),
    ("git status", "env -S 'touch PWNED' git status"),
    ("git status", "command git status"),
    ("git status", "exec git status"),
    ("git status", "nohup git status"),
    ("git status", "timeout 5 git status"),
    ("git status", "xargs git status"),
    ("git status", "busybox git status"),
    ("git status", "GIT_EXTERNAL_DIFF='touch PWNED' git status"),
    ("git status", "git sta* --short"),
    ("git status", "git stat?s"),
    ("git status", "git status -- ~"),
    ("git status", "git status ../.."),
    ("git status", "git status --porcelain; touch PWNED"),
    ("git status", "alias git='touch PWNED'; git status"),
    ("git status", "git() { touch PWNED; }; git status"),
    ("git status", "PATH=.:$PATH git status"),
    ("git status", "git status\x1b[2K\rtouch PWNED"),
    ("git status", "git status \\; touch PWNED"),
    ("git status", "git commit -m x"),
    ("git status", "git st"),
    # --- under "always" for `ls` ----------------------------------------------------------------------------------
    ("ls", "ls > important.py"),
    ("ls", "ls; >important.py"),
    ("ls", "ls >> .git/hooks/pre-commit"),
    ("ls", "ls 2>PWNED"),
    ("ls", "ls $(touch PWNED)"),
    ("ls", "ls `touch PWNED`"),
    ("ls", "ls && touch PWNED"),
    ("ls", "ls | sh"),
    ("ls", "ls *"),
    ("ls", "ls {a,b}"),
    ("ls", "LS_COLORS=x ls"),
    ("ls", "ls ~/.ssh"),
    ("ls", "ls /etc"),
    ("ls", "ls ${HOME}"),
    ("ls", "ls\u202e; touch PWNED"),
    ("ls", "ls\u200b -la"),
    # --- under "always" for `find . -name '*.txt'` ----------------------------------------------------------------
    (FIND, "find . -exec sh -c 'touch PWNED' \\;"),
    (FIND, "find . -exec touch PWNED ';'"),
    (FIND, "find . -execdir touch PWNED '+'"),
    (FIND, "find . -ok touch PWNED ';'"),
    (FIND, "find . -fprint PWNED"),
    (FIND, "find . -name x -fls PWNED"),
    (FIND, "find . -delete"),
    (FIND, "find / -name passwd"),
    # --- under "always" for `python3 build.py` (exact argv) -------------------------------------------------------
    (BUILD, "python3 -c 'open(\"PWNED\", \"w\")'"),
    (BUILD, "python3 build.py; touch PWNED"),
    (BUILD, "python3 build.py > PWNED"),
    (BUILD, "python3 build.py --evil"),
    (BUILD, "PYTHONSTARTUP=x python3 build.py"),
    (BUILD, "PYTHONPATH=. python3 build.py"),
    (BUILD, "python3 -X importtime build.py"),
    (BUILD, "python3 ./build.py"),
    (BUILD, "python3 - < build.py"),
    (BUILD, "python3 -m build"),
    # --- under "always" for `cat notes.txt`, `echo hi`, `grep`, `python3 -m pytest` ------------------------------
    ("cat notes.txt", "cat /etc/passwd"),
    ("cat notes.txt", "cat ../outside.txt"),
    ("cat notes.txt", "cat escape/secret.txt"),  # a symlink to a folder outside the workspace
    ("cat notes.txt", "cat -- ~/.bashrc"),
    ("cat notes.txt", "cat notes.txt > PWNED"),
    ("echo hi", "echo hi > PWNED"),
    ("echo hi", "echo $(touch PWNED)"),
    ("echo hi", "echo `touch PWNED`"),
    ("echo hi", "echo hi; touch PWNED"),
    ("echo hi", "echo hi | sh"),
    ("echo hi", "echo ${IFS}"),
    ("grep -n hello notes.txt", "grep -rn x . > PWNED"),
    ("grep -n hello notes.txt", "grep -f /etc/shadow notes.txt"),
    ("grep -n hello notes.txt", "rg --pre 'touch PWNED' x"),
    (PYTEST, "python3 -m pytest -p evil_plugin"),
    (PYTEST, "python3 -m pytest --basetemp=/tmp/x"),
    (PYTEST, "python3 -m pytest -c /etc/passwd"),
    (PYTEST, "python3 -m pytest -q; touch PWNED"),
]


class Approver:
    """Answers "always" for exactly one command and denies everything else; records what it was asked."""

    def __init__(self, always_for: str):
        self.always_for = always_for
        self.asked: list[str] = []
        self.requests = []

    def __call__(self, request):
        self.asked.append(request.arguments["command"])
        self.requests.append(request)
        return Decision.ALLOW_ALWAYS if request.arguments["command"] == self.always_for else Decision.DENY_ONCE


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (ws / "notes.txt").write_text("hello\n")
    (ws / "build.py").write_text("print('built')\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    (ws / "escape").symlink_to(tmp_path / "outside")
    return ws


def no_trace(ws, tmp_path):
    made = [p for p in tmp_path.rglob("PWNED")] + [p for p in (ws / "important.py",) if p.exists()]
    assert made == [], made
    assert (ws / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"


@pytest.mark.parametrize("first, attack", ATTACKS)
def test_always_does_not_cover_the_attack(ws, tmp_path, first, attack):
    approver = Approver(first)
    tb = Toolbox(ws, Policy("ask"), approver)
    assert tb.check("run_shell", {"command": first}) is None  # allowed, and remembered
    assert approver.asked == [first]
    refusal = tb.check("run_shell", {"command": attack})
    assert approver.asked == [first, attack], f"{attack!r} would run under the allowance for {first!r}"
    assert refusal is not None and "denied by the user" in refusal
    no_trace(ws, tmp_path)
    # The harmless exact repeat is still covered: not asked again.
    assert tb.check("run_shell", {"command": first}) is None
    assert approver.asked == [first, attack]


@pytest.mark.parametrize("first, variants", [
    ("git status", ["git status", "git status --short", "git status -sb", "git --no-pager status", "git status ."]),
    ("ls", ["ls", "ls -la", "ls -la notes.txt", "ls 'notes.txt'"]),
    (FIND, [FIND, "find . -type f -name '*.py'", "find . -maxdepth 1"]),
    (BUILD, [BUILD]),
    ("cat notes.txt", ["cat notes.txt", "cat -n notes.txt", "cat build.py notes.txt"]),
    ("git log --oneline -5", ["git log", "git log -3 --stat", "git --no-pager log --format=%H"]),
    (PYTEST, [PYTEST, "python3 -m pytest -x -k name"]),
])
def test_always_covers_its_family_without_asking(ws, tmp_path, first, variants):
    approver = Approver(first)
    tb = Toolbox(ws, Policy("ask"), approver)
    assert tb.check("run_shell", {"command": first}) is None
    for command in variants:
        assert tb.check("run_shell", {"command": command}) is None
    assert approver.asked == [first]
    assert approver.requests[0].always  # the request said, in words, what "always" remembers


@pytest.mark.parametrize("command, reason", [
    ("echo hi > out.txt", "redirects"),
    ("ls && ls", "chains"),
    ("FOO=1 ls", "environment variables"),
    ("env ls", "env"),
    ("sudo ls", "sudo"),
    ("python3 -c 'print(1)'", "inline"),
    ("bash -c 'ls'", "inline"),
    ("git -c a.b=c status", "before the subcommand"),
    ("git log --output=x", "--output"),
    ("ls $HOME", "expands"),
    ("rm -rf build", "high danger"),
    ("awk 1 notes.txt", "program given in its arguments"),
    ("cat ../x", "outside the workspace"),
])
def test_always_not_offered_applies_once(ws, command, reason):
    asked = []

    def approver(request):
        asked.append(request)
        return "allow_always"  # the user presses "always" anyway (an approver that ignores the offer)

    tb = Toolbox(ws, Policy("ask"), approver)
    tb.check("run_shell", {"command": command})
    tb.check("run_shell", {"command": command})
    assert len(asked) == 2, "a command that cannot be remembered must be asked about every time"
    assert asked[0].always is None and reason in asked[0].always_note, asked[0].always_note
    assert tb.policy.remembered()["allow"] == {}


def test_issue_example_exactly(ws, tmp_path):
    tb = Toolbox(ws, Policy("ask"),
                 approver=lambda r: "allow_always" if r.arguments["command"] == "git status" else False)
    assert tb.call("run_shell", {"command": "git status"}).ok
    res = tb.call("run_shell", {"command": "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor "
                                           "GIT_CONFIG_VALUE_0='touch PWNED; false' git status"})
    assert not res.ok and "denied by the user" in res.error and not (ws / "PWNED").exists()
    assert tb.call("run_shell", {"command": "git status --short"}).ok  # the family runs, unasked


def test_allowance_keys_and_words(ws):
    assert remember("git status -s", ws).allowance == Allowance(("git", "status"), False)
    assert remember(BUILD, ws).allowance == Allowance(("python3", "build.py"), True)
    assert remember("python3 -c x", ws).allowance is None
    assert "exactly `python3 build.py`" in remember(BUILD, ws).allowance.describe()
    assert "`git status` with its known-safe options" in remember("git status", ws).allowance.describe()
    # An exact allowance is for the same words, not the same text: quoting that changes nothing is the same argv.
    assert remember("python3 'build.py'", ws).allowance == remember(BUILD, ws).allowance
    assert remember("python3 'build.py x'", ws).allowance != remember("python3 build.py x", ws).allowance


def test_deny_always_still_covers_chains(ws):
    """Deny always stays broad (refusing more is safe): a denied program is refused inside any chain."""
    tb = Toolbox(ws, Policy("ask"), lambda r: "deny_always")
    tb.call("run_shell", {"command": "touch a"})
    asked = []
    tb.approver = lambda r: asked.append(r) or True
    assert "deny always" in tb.call("run_shell", {"command": "ls; touch b"}).error
    assert asked == [] and not (ws / "b").exists() and not (ws / "a").exists()


def test_check_decides_and_runs_nothing(ws):
    tb = Toolbox(ws, Policy("auto"))
    assert tb.check("write_file", {"path": "new.txt", "content": "x"}) is None
    assert tb.check("run_shell", {"command": "touch PWNED"}) is None
    assert not (ws / "new.txt").exists() and not (ws / "PWNED").exists()
    assert tb.check("nope") == "unknown tool 'nope'; available tools: " + ", ".join(tb.names())
    assert "invalid arguments" in tb.check("read_file", {})
    assert "read-only mode" in Toolbox(ws, Policy("read-only")).check("run_shell", {"command": "ls"})
