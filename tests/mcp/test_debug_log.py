"""LOCALSPEC_LOG=debug: a private log file in the log folder (the path `config show` prints) with a line per drafting
gate window and the MCP servers' lifecycle, from a real `run --tools` on the tiny GGUF with the test MCP server."""

from __future__ import annotations

import pytest

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.mcp.conftest import stdio_server, write_mcp_config

pytestmark = pytest.mark.slow  # run --tools in a subprocess with an MCP server

ROOT = Path(__file__).resolve().parents[2]


def localspec(*args, home: Path, cwd: Path, **env) -> subprocess.CompletedProcess:
    environ = dict(os.environ, LOCALSPEC_HOME=str(home), PYTHONPATH=str(ROOT), **env)
    environ.pop("LOCALSPEC_LOG", None)
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "localspec", *map(str, args)], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_the_debug_log_holds_gate_windows_and_mcp_lifecycle(tiny_target, tmp_path, notes):
    home, log = tmp_path / "home", tmp_path / "home" / "logs" / "localspec.log"
    shown = localspec("config", "show", home=home, cwd=tmp_path)
    assert f"# debug log: {log} (written with LOCALSPEC_LOG=debug)" in shown.stdout
    assert not log.exists()  # off unless asked for

    config = write_mcp_config(tmp_path / "mcp.json", {"notes": stdio_server(notes)})
    proc = localspec("run", "write a long story", "--target", tiny_target, "--tools", "--approve", "never",
                     "--mcp-config", config, "--tool-names", "read_note", "--max-tokens", "120", "--max-steps", "1",
                     "--tool-choice", "none",
                     "--threads", "1", "--workspace", tmp_path, home=home, cwd=tmp_path, LOCALSPEC_LOG="debug")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    lines = log.read_text().splitlines()
    mcp = [line for line in lines if " localspec.mcp: " in line]
    assert any("server notes: starting" in line for line in mcp), lines
    assert any("server notes: running (" in line for line in mcp), lines
    assert any("server notes: stopped" in line for line in mcp), lines
    windows = [line for line in lines if " localspec.drafting: gate window prose: " in line and " proposals, step_ms=" in line]
    assert windows, lines
    asked = [w for w in windows if "no source asked" not in w]  # sources asked: each with its rows, accepted, prices
    assert asked and all("rows=" in w and "accepted=" in w and "spent_ms=" in w and "saved_ms=" in w for w in asked)
    assert proc.stdout and "localspec.drafting" not in proc.stderr  # the log stays out of the terminal
