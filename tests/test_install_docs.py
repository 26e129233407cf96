"""What a new user reads and installs: the README's install and quick start, the server's dependencies in the base
install, and the shipped BFCL suite with its attribution."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SUITE = ROOT / "benchmarks" / "bfcl_subset.jsonl"
CARD = ROOT / "benchmarks" / "bfcl_subset.md"


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def install_block() -> list[str]:
    """The commands of the Install section's first sh block, as a user copies them."""
    block = re.search(r"```sh\n(.*?)```", section("Install"), re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_readme_installs_from_a_checkout_or_a_git_url_never_from_the_index():
    install = section("Install")
    assert not re.search(r"pipx install '?localspec(\[|\b)", README)  # not on PyPI: that command fails
    # Two commands, in this order: install (with the demo model: something to talk to, even offline) and run.
    assert install_block() == ['pipx install "./localspec[demo]"', 'localspec run "Say hello in five words"']
    assert "git+https://" in install and "git clone" in install  # the checkout, or the repository itself
    assert "python3 -m pip install --user pipx" in install  # pipx is not assumed
    assert "five minutes" in install and "--no-cache-dir" in install and "--force" in install  # the cached wheel
    assert re.search(r"--extra-index-url https://abetlen\.github\.io/llama-cpp-python/whl/cu12\d", install)
    assert "--prefer-binary" in install  # else pip prefers a newer sdist to an older prebuilt wheel


def test_the_cpu_flags_line_is_in_the_quick_start():
    flags = 'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"'
    quick = section("Quick start")
    assert flags in quick and flags not in section("Install")
    assert "-DGGML_AVX512=ON" in quick and "avx512f" in quick  # only where the CPU has it (else: illegal instruction)
    line = next(x for x in quick.splitlines() if x.startswith(flags))
    # A rebuild after a first install: without --force pipx does nothing, without --no-cache-dir pip reuses the
    # first wheel; and the reader learns what "misbehave" looks like.
    assert "pipx install --force --pip-args=--no-cache-dir" in line
    assert "Segmentation fault" in quick and "Illegal instruction" in quick


@pytest.mark.parametrize("flags,avx512", [
    ("fpu sse avx2 fma f16c amx_tile amx_int8 avx512f avx512bw", True),  # the AMX machine: AVX-512, never AMX
    ("fpu sse avx2 fma f16c sha_ni vaes", False),  # an AMD EPYC without AVX-512: a build with it dies
    (None, False),  # no /proc/cpuinfo flags line (not Linux): the AVX2 set
])
def test_llama_cpp_is_built_for_the_instruction_sets_this_cpu_has(flags, avx512):
    import importlib.util

    spec = importlib.util.spec_from_file_location("llama_server_build", ROOT / "scripts" / "llama_server.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    got = build.cpu_flags(f"processor\t: 0\nflags\t\t: {flags}\n" if flags else "processor\t: 0\n")
    assert "-DGGML_NATIVE=OFF" in got and "-DGGML_AVX2=ON" in got  # pinned, never -march=native
    assert ("-DGGML_AVX512=ON" in got) == avx512
    assert not any("AMX" in f for f in got)


def _checkout_copy(dest: Path) -> Path:
    """The checkout as a user has it (tracked and new files, nothing git ignores: no .venv, no caches)."""
    import shutil
    import subprocess

    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.mark.slow
def test_the_install_block_runs_as_written_in_a_fresh_environment(tmp_path):
    """The README's two commands, verbatim, in a fresh virtual environment that has only pipx (the README says how
    to get it): pipx installs ./localspec[demo] (llama-cpp-python from pip's cache once built, CMAKE_ARGS as the
    environment has them, like a user's), and the installed `localspec` answers with the demo model."""
    import os
    import subprocess
    import venv

    if shutil_which("git") is None:
        pytest.skip("needs git to list the checkout's files")
    _checkout_copy(tmp_path / "localspec")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    pip = subprocess.run([env_dir / "bin" / "python", "-m", "pip", "install", "--quiet", "pipx"],
                         capture_output=True, text=True)
    if pip.returncode:
        pytest.skip(f"pipx could not be installed (no package index?): {pip.stderr.strip()[-300:]}")
    bin_dir = tmp_path / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALSPEC_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{bin_dir}:{env_dir / 'bin'}:{os.environ['PATH']}", PIPX_HOME=str(tmp_path / "pipx"),
               PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(tmp_path / "man"),
               LOCALSPEC_HOME=str(tmp_path / "home"))
    for line in install_block():
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=3600)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert done.stdout.strip(), "the demo model said nothing"  # the last line is the run
    assert (bin_dir / "localspec").exists()


def shutil_which(name: str):
    import shutil

    return shutil.which(name)


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
