"""How the CLI fails: one line by default, the full traceback with LOCALSPEC_DEBUG=1, and quiet on a closed pipe.

The closed-pipe and LocalspecError cases run `python -m localspec` as a user does. The unexpected-exception cases
call cli.main in-process with one command made to raise: no real command fails that way on purpose, and what is
under test is the error boundary in cli.main, not the command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from localspec import cli

ROOT = Path(__file__).resolve().parent.parent
HINT = "(set LOCALSPEC_DEBUG=1 to see the traceback)"


def env_for(home: Path, **extra: str) -> dict:
    # PYTHONUNBUFFERED (set on some CI machines) would hide the closed-pipe case: a user's stdout is buffered.
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALSPEC_DEBUG", "PYTHONUNBUFFERED")}
    env.update(LOCALSPEC_HOME=str(home), HF_HUB_OFFLINE="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)
    return env


def localspec(*args: str, home: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localspec", *args], cwd=ROOT, env=env_for(home, **extra),
                          capture_output=True, text=True, timeout=120)


# -- a LocalspecError: one line, or the traceback too under LOCALSPEC_DEBUG --------------------------------------
BAD_SET = ("config", "set", "sampling.temperature", "warm")


def test_user_error_is_one_line(tmp_path):
    proc = localspec(*BAD_SET, home=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: config: sampling.temperature:") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["1", "true"])
def test_user_error_with_debug_shows_the_traceback(tmp_path, value):
    proc = localspec(*BAD_SET, home=tmp_path, LOCALSPEC_DEBUG=value)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert any("ConfigError" in line for line in lines[1:-1])
    assert lines[-1].startswith("error: config: sampling.temperature:")  # the one line still comes last


def test_debug_set_to_zero_is_off(tmp_path):
    proc = localspec(*BAD_SET, home=tmp_path, LOCALSPEC_DEBUG="0")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr


# -- an unexpected exception (a bug) -----------------------------------------------------------------------------
@pytest.fixture
def broken_doctor(monkeypatch):
    from localspec.commands import doctor

    def collect(**_options):
        raise RuntimeError("boom in collect")

    monkeypatch.setattr(doctor, "collect", collect)


def test_unexpected_error_is_one_line_with_a_hint(broken_doctor, monkeypatch, capsys):
    monkeypatch.delenv("LOCALSPEC_DEBUG", raising=False)
    assert cli.main(["doctor"]) == 1
    err = capsys.readouterr().err
    assert err == f"error: unexpected RuntimeError: boom in collect {HINT}\n"


def test_unexpected_error_with_debug_shows_the_traceback(broken_doctor, monkeypatch, capsys):
    monkeypatch.setenv("LOCALSPEC_DEBUG", "1")
    assert cli.main(["doctor"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "RuntimeError: boom in collect" in lines[-2]
    assert lines[-1] == "error: unexpected RuntimeError: boom in collect"


# -- a reader that goes away: `localspec models --json | head` ----------------------------------------------------
@pytest.mark.parametrize("args", [("models", "--json"), ("models",), ("config", "show", "--json")])
@pytest.mark.slow  # the CLI in subprocesses
def test_closed_pipe_is_quiet_and_exits_0(tmp_path, args):
    """stdout is a real pipe whose read end is already closed (as after `head` exits): every write fails with
    EPIPE. Without care Python prints "Exception ignored ... BrokenPipeError" at exit and exits 120 (small outputs
    fail only when the buffer is flushed at exit, outside any handler)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "localspec", *args], cwd=ROOT,
                              env=env_for(tmp_path), stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_pipe_into_head(tmp_path):
    """The shell pipeline itself: whichever way the race between writer and `head` goes, no noise and exit 0."""
    cmd = f"set -o pipefail; {sys.executable} -m localspec models --json | head -n 1"
    proc = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env_for(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "{\n" and proc.stderr == ""


# -- --help ---------------------------------------------------------------------------------------------------------

def _options(parser, command: str = "localspec"):
    """(command, option, default, help) of every option of `parser` and its subcommands."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{command} {name}")
        elif action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield command, action.option_strings[-1], action.default, action.help or ""


def test_every_option_with_a_default_says_it_in_its_help():
    """`serve --help` once showed `--port PORT` and nothing else: a value the command uses unless told otherwise is
    one a user needs to read there (switches, and options whose default is "not given", need not say)."""
    import argparse

    silent = [f"{cmd} {opt} (default {default!r})" for cmd, opt, default, text in _options(cli.build_parser())
              if default not in (None, False, True, [], argparse.SUPPRESS) and "default" not in text]
    assert silent == []


# -- issue 38.7: an app option written before a command is refused, never silently dropped -----------------------
@pytest.mark.parametrize("argv,option,hint", [
    (["--workspace", "/tmp", "run", "--tools", "hi", "--target", "missing.gguf"], "--workspace",
     "localspec run --workspace"),
    (["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "run", "hi", "--target", "missing.gguf"],
     "--backend", "localspec run --backend"),
    (["--base-url=http://127.0.0.1:9/v1", "run", "hi"], "--base-url", "localspec run --base-url"),
    (["--mcp-config", "servers.json", "run", "--tools", "hi", "--target", "missing.gguf"], "--mcp-config",
     "localspec run --mcp-config"),
    (["--no-tools", "run", "hi", "--target", "missing.gguf"], "--no-tools", "`localspec run` does not take it"),
    (["--works", "/tmp", "models"], "--works", "`localspec models` does not take it"),
    (["--api-key", "k", "serve", "--target", "missing.gguf"], "--api-key", "localspec serve --backend-api-key"),
    (["--pair", "x", "bench", "suite.jsonl"], "--pair", "localspec bench --pair"),
])
def test_an_app_option_before_a_command_is_refused_in_one_line(argv, option, hint, capsys):
    with pytest.raises(SystemExit) as refused:  # a usage error, as argparse's own: exit 1
        cli.main(argv)
    assert refused.value.code == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: localspec: {option} before the command is an option of the app") and hint in err


def test_app_options_before_tui_are_the_apps(tmp_path):
    """`localspec --workspace DIR tui` is the app with DIR (the `tui` command's own defaults used to overwrite it),
    and an option after `tui` still counts."""
    from localspec.commands.tui import options_from_args

    parser = cli.build_parser()
    for argv in (["--workspace", str(tmp_path), "--no-tools", "--max-tokens", "7", "tui"],
                 ["tui", "--workspace", str(tmp_path), "--no-tools", "--max-tokens", "7"],
                 ["--workspace", "/", "tui", "--workspace", str(tmp_path), "--no-tools", "--max-tokens", "7"]):
        args = parser.parse_args(argv)
        assert cli.app_option_before_command(parser, args, argv) == ""
        options = options_from_args(args)
        assert (options.workspace, options.tools_on, options.max_tokens) == (tmp_path.resolve(), False, 7), argv
    plain = options_from_args(parser.parse_args(["tui"]))
    assert plain.tools_on and plain.max_tokens == 1024 and plain.workspace == Path.cwd().resolve()
