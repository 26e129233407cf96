"""End to end through `python -m localspec` in a subprocess: environment variables read at import time
(HF_ENDPOINT, HF_HUB_OFFLINE) behave as a user sees them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


def localspec(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localspec", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


@pytest.fixture(autouse=True)
def _needs_cli():
    if not (ROOT / "localspec" / "cli.py").exists():
        pytest.skip("localspec/cli.py is not there yet")


@pytest.mark.slow  # the CLI in subprocesses
def test_pull_then_models_json(tiny_hub):
    r = localspec("pull", "tiny")
    assert r.returncode == 0, r.stderr
    assert "pair 'tiny' ready" in r.stdout
    r = localspec("models", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert {(f["repo"], f["file"]) for f in data["installed"]} == {
        ("test-org/tiny-target-GGUF", "tiny-target.gguf"), ("test-org/tiny-draft-GGUF", "tiny-draft.gguf")}
    assert all(set(f) >= {"repo", "file", "path", "size", "sha256"} for f in data["installed"])
    assert {p["name"]: p["state"] for p in data["catalog"]} == {"tiny": "installed", "mismatched": "partial"}
    r = localspec("models")
    assert r.returncode == 0 and "* tiny" in r.stdout and "installed files" in r.stdout


def test_offline_without_a_model_is_one_line(tiny_hub):
    r = localspec("pull", "tiny", HF_HUB_OFFLINE="1")
    assert r.returncode == 1
    assert r.stderr == ("error: offline: pair 'tiny' is not downloaded (missing tiny-target.gguf, tiny-draft.gguf); "
                        "run `localspec pull tiny` (2 MB) when online\n")
    assert not [e for e in tiny_hub.log if e["repo"]]


@pytest.mark.slow  # the CLI in subprocesses
def test_config_set_and_show(home):
    r = localspec("config", "set", "sampling.temperature", "0.3")
    assert r.returncode == 0, r.stderr
    r = localspec("config", "show", "--json", LOCALSPEC_THEME="nord")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["sampling"]["temperature"] == 0.3 and shown["theme"] == "nord"
    assert (home / "config" / "config.toml").read_text().count("theme") == 0
    r = localspec("config", "set", "sampling.temperature", "warm")
    assert r.returncode == 1 and r.stderr.startswith("error: config: sampling.temperature:")
    assert r.stderr.count("\n") == 1
