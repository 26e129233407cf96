"""What a new user reads and installs: the README's install and quick start, the server's dependencies in the base
install, and the shipped BFCL suite with its attribution."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SUITE = ROOT / "benchmarks" / "bfcl_subset.jsonl"
CARD = ROOT / "benchmarks" / "bfcl_subset.md"


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def test_readme_installs_from_a_checkout_or_a_git_url_never_from_the_index():
    install = section("Install")
    assert not re.search(r"pipx install '?localspec(\[|\b)", README)  # not on PyPI: that command fails
    assert 'pipx install "git+https://' in install and "pipx install ./localspec" in install
    assert "five minutes" in install and "--no-cache-dir" in install  # the build, and its cached wheel
    assert re.search(r"--extra-index-url https://abetlen\.github\.io/llama-cpp-python/whl/cu12\d", install)
    assert "--prefer-binary" in install  # else pip prefers a newer sdist to an older prebuilt wheel


def test_the_cpu_flags_line_is_in_the_quick_start():
    flags = 'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON"'
    assert flags in section("Quick start") and flags not in section("Install")


def test_readme_explains_saved_conversations():
    quick = section("Quick start")
    for needle in ("localspec --continue", "--resume ID", "localspec sessions", "F4", "Ctrl+N", "Ctrl+S",
                   "exports"):
        assert needle in quick


def test_server_dependencies_are_in_the_base_install():
    """`pip install 'localspec[serve]'` fails under pipx: the server's packages come with every install instead."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {re.split(r"[<>=!~; \[]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert {"starlette", "uvicorn", "sse-starlette"} <= base
    assert "serve" not in project["optional-dependencies"]  # pip still installs localspec[serve], with a warning
    assert "localspec[serve]" not in (ROOT / "docs" / "serve.md").read_text()


def test_the_bfcl_suite_ships_with_its_attribution():
    assert "localspec bench benchmarks/bfcl_subset.jsonl" in README and "shared/bench" not in README
    card = CARD.read_text(encoding="utf-8")
    documented = re.search(r"sha256 of `bfcl_subset.jsonl`: `([0-9a-f]{64})`", card).group(1)
    assert hashlib.sha256(SUITE.read_bytes()).hexdigest() == documented  # the file the card describes
    assert "Apache License 2.0" in card and "Berkeley Function Calling" in card
    for author in ("Yan", "Mao", "Ji", "Zhang", "Patil", "Stoica", "Gonzalez"):
        assert author in card
    rows = [json.loads(line) for line in SUITE.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 150
    assert {r["category"] for r in rows} == {"simple_python", "multiple", "parallel"}
    assert all({"id", "messages", "tools", "ground_truth"} <= set(r) for r in rows)
