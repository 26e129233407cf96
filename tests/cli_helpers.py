"""`python -m localspec` as a user runs it, in a subprocess on this checkout: the helpers the CLI tests share."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# `run --tools` on the tiny GGUF: two steps, a forced call to one of two tools, a few tokens each.
AGENT_ARGS = ("--no-draft", "--tools", "--max-steps", "2", "--tool-choice", "required", "--max-tokens", "8",
              "--tool-names", "read_file,list_dir", "--threads", "1")


def localspec(*args, home: Path, cwd: Path = ROOT, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """The CLI with its own LOCALSPEC_HOME."""
    env = dict(os.environ, LOCALSPEC_HOME=str(home),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "localspec", *map(str, args)], cwd=cwd, env=env, stdin=stdin,
                          capture_output=True, text=True, timeout=120)


def run_localspec(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in the checkout, under this process's environment; without a LOCALSPEC_HOME there, in a scratch one
    shared by the test run (a plain `run` saves its conversation: never in the user's own store)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("LOCALSPEC_HOME", _scratch_home())
    return subprocess.run([sys.executable, "-m", "localspec", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


_SCRATCH: list[str] = []


def _scratch_home() -> str:
    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="localspec-test-home-"))
        atexit.register(shutil.rmtree, _SCRATCH[0], ignore_errors=True)
    return _SCRATCH[0]


def one_call_suite(folder: Path) -> Path:
    """A bench suite of one case (a greeting and one tool without arguments): enough for a front end to build and run
    its engines (tests/launch/)."""
    import json

    suite = folder / "suite.jsonl"
    suite.write_text(json.dumps({"id": "c", "messages": [{"role": "user", "content": "hi"}], "tools": [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]}) + "\n")
    return suite
