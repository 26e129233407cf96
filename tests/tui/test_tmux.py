"""The agent seen at work on day one, as a person drives it (issue 28, part 4): the app in a real terminal (tmux, 80x24)
with the packaged demo model, which never picks a tool by itself; `/tool run_shell ...` forces the call, the
approval screen comes up with its keys, the answer is given with a key press, and Ctrl+Q quits cleanly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from localspec.models.selection import demo_model_path

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
              pytest.mark.skipif(demo_model_path() is None, reason="needs the packaged demo model (localspec[demo])")]


def tmux(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30)


def screen(name: str) -> str:
    return tmux("capture-pane", "-p", "-t", name).stdout


def wait_for_text(name: str, needle: str, timeout: float) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        shown = screen(name)
        if needle in shown:
            return shown
        if tmux("has-session", "-t", name).returncode:
            raise AssertionError(f"the app ended while waiting for {needle!r}")
        time.sleep(0.5)
    raise AssertionError(f"{needle!r} never appeared; the screen:\n{screen(name)}")


@pytest.fixture
def app_in_tmux(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text('default_pair = "demo"\napproval = "ask"\n')
    ws.mkdir()
    (ws / "notes.txt").write_text("buy milk\n")
    name = f"localspec-test-{uuid.uuid4().hex[:8]}"
    env = {"LOCALSPEC_HOME": str(home), "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
    command = " ".join([*(f"{k}={v}" for k, v in env.items()), sys.executable, "-m", "localspec", "--workspace",
                        str(ws), "--threads", str(min(2, os.cpu_count() or 1)),
                        # the demo model (Q4_1) may pick another token in a batch than alone, so what it says after
                        # the refusal varies from run to run; a short answer keeps the card on the 24 lines
                        "--max-tokens", "48"])
    started = tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", command)
    assert started.returncode == 0, started.stderr
    try:
        yield name, ws
    finally:
        tmux("kill-session", "-t", name)


def test_a_forced_call_reaches_the_approval_screen_in_a_real_terminal(app_in_tmux):
    name, ws = app_in_tmux
    wait_for_text(name, "demo · ready", 120)
    tmux("send-keys", "-t", name, "-l", "/tool run_shell list the files here")
    tmux("send-keys", "-t", name, "Enter")
    wait_for_text(name, "run_shell wants to", 600)  # the demo model reads the tools once, then calls
    shown = wait_for_text(name, "d Deny always", 30)  # the screen drawn whole, its keys in the footer
    assert "y Allow once" in shown and "n Deny once" in shown and "a Allow always" in shown
    assert "run_shell wants to: run: " in shown and "danger:" in shown  # what would run, and how risky it is
    tmux("send-keys", "-t", name, "n")
    end = time.monotonic() + 300
    while "wants to" in screen(name) or "ready" not in screen(name).splitlines()[0]:
        assert time.monotonic() < end, screen(name)
        time.sleep(0.5)
    shown = screen(name)
    assert "run_shell" in shown and "ready" in shown.splitlines()[0]  # the card stays, the turn ended
    tmux("send-keys", "-t", name, "C-q")
    end = time.monotonic() + 30
    while tmux("has-session", "-t", name).returncode == 0:
        assert time.monotonic() < end, "Ctrl+Q did not end the app"
        time.sleep(0.3)


REPLIES = ["1. 1. 1. 2. 3. 4. 5. 6. 7. 8. 9. 10.\n\nThe numbers are in descending order.",
           "Use <T> for the type and <br> between lines."]


@pytest.mark.parametrize("size", [(80, 24), (120, 35)])
def test_awkward_replies_are_shown_when_a_conversation_is_reopened(tmp_path, size):
    """Issue 39.1 as it was seen: replies the Markdown view showed as an empty block, reopened with --continue."""
    from localspec.conversations import ConversationStore
    from localspec.runtime.tinymodel import write_tiny_llama

    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    target = write_tiny_llama(tmp_path / "t.gguf", n_ctx_train=8192)
    (home / "data").mkdir(parents=True)
    with ConversationStore(home / "data" / "conversations.sqlite3") as store:
        cid = store.create(pair="t.gguf", workspace=str(ws), params={"target": str(target)})
        for question, reply in zip(("Count from 1 to 10.", "Name a type."), REPLIES):
            store.add_message(cid, {"role": "user", "content": question})
            store.add_message(cid, {"role": "assistant", "content": reply})
    name = f"localspec-test-{uuid.uuid4().hex[:8]}"
    env = {"LOCALSPEC_HOME": str(home), "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
    command = " ".join([*(f"{k}={v}" for k, v in env.items()), sys.executable, "-m", "localspec", "--continue",
                        "--target", str(target), "--threads", "1"])
    started = tmux("new-session", "-d", "-s", name, "-x", str(size[0]), "-y", str(size[1]), command)
    assert started.returncode == 0, started.stderr
    try:
        shown = wait_for_text(name, "ready", 120)
        for needle in ("The numbers are in descending order.", "10.", "Use <T> for the type"):
            assert needle in shown or needle in wait_for_text(name, needle, 10), shown
    finally:
        tmux("kill-session", "-t", name)
