"""The import-linter contracts in pyproject.toml: localspec/ keeps them; they really fail on a cycle (also one
hidden inside a function) and on a layer arrow pointing the wrong way; and they name every part of the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
LINT = Path(sys.executable).with_name("lint-imports")


def contracts() -> list[dict]:
    return tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]


def parts() -> set[str]:
    """localspec's top-level modules and packages, as the contracts name them."""
    return {f"localspec.{p.stem if p.suffix == '.py' else p.name}" for p in (ROOT / "localspec").iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}


def lint(cwd: Path, config: Path = PYPROJECT, path: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(path))
    return subprocess.run([str(LINT), str(config), "--no-cache"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_localspec_keeps_its_contracts(tmp_path):
    proc = lint(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in proc.stdout


@pytest.mark.parametrize("name", ["runtime/ wraps", "constants.py", "only tui/ imports", "only mcp/ imports"])
def test_the_contracts_name_every_part_of_the_package(name):
    """A new top-level part of localspec must be placed: these contracts list the parts one by one."""
    (contract,) = [c for c in contracts() if c["name"].startswith(name)]
    listed = set(contract["source_modules"]) | set(contract["forbidden_modules"])
    owner = {"runtime/ wraps": {"localspec.errors", "localspec.constants"}, "constants.py": set(),
             "only tui/ imports": {"localspec.tui"}, "only mcp/ imports": {"localspec.mcp"}}[name]
    assert parts() - owner <= listed, sorted(parts() - owner - listed)


def make_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package called localspec with every part the contracts name (empty), plus `files`."""
    root = tmp_path / "src" / "localspec"
    empty = {f"{p.removeprefix('localspec.').replace('.', '/')}/__init__.py": "" for p in parts()}
    for rel, text in {"__init__.py": "", **empty, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    config = tmp_path / "contracts.toml"
    text = PYPROJECT.read_text()
    config.write_text(text[text.index("\n[tool.importlinter]\n"):])
    return config


@pytest.mark.parametrize("files, needle", [
    # Two modules that import each other, one of them only inside a function: still a cycle.
    ({"commands/run.py": "from localspec.commands import agent_run\n",
      "commands/agent_run.py": "def f():\n    from localspec.commands.run import g\n"},
     "No cycles are allowed in localspec.commands."),
    # Across packages: agent -> tools -> agent.
    ({"agent/loop.py": "from localspec.tools.box import T\n",
      "tools/box.py": "def f():\n    from localspec.agent.loop import Agent\n"},
     "No cycles are allowed in localspec.\n"),
])
def test_a_cycle_fails(tmp_path, files, needle):
    proc = lint(tmp_path, make_package(tmp_path, files), tmp_path / "src")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no cycles" in proc.stdout and "BROKEN" in proc.stdout
    assert needle in proc.stdout, proc.stdout


@pytest.mark.parametrize("files, needle", [
    ({"speculative/decoder.py": "def f():\n    import localspec.agent.loop\n", "agent/loop.py": ""},
     "localspec.speculative.decoder -> localspec.agent.loop"),
    ({"runtime/model.py": "from localspec.models.paths import p\n", "models/paths.py": ""},
     "localspec.runtime.model -> localspec.models.paths"),
    ({"tools/files.py": "from localspec.commands.shared_flags import x\n", "commands/shared_flags.py": ""},
     "localspec.tools.files -> localspec.commands.shared_flags"),
    # Indirectly too: tools -> prompting -> agent.
    ({"tools/files.py": "from localspec.prompting.x import y\n", "prompting/x.py": "import localspec.agent.loop\n",
      "agent/loop.py": ""}, "localspec.tools.files -> localspec.prompting.x"),
    ({"agent/loop.py": "from textual.app import App\n"}, "localspec.agent.loop -> textual"),
    ({"serve/http_app.py": "import httpx2\n"}, "localspec.serve.http_app -> httpx2"),
])
def test_a_layer_breach_fails(tmp_path, files, needle):
    proc = lint(tmp_path, make_package(tmp_path, files), tmp_path / "src")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert needle in proc.stdout, proc.stdout


def test_an_init_reexporting_its_own_modules_is_not_a_cycle(tmp_path):
    config = make_package(tmp_path, {
        "agent/__init__.py": "from .events import Done\nfrom .loop import Agent\n",
        "agent/events.py": "", "agent/loop.py": "from .events import Done\nfrom localspec.agent import events\n",
        "tui/app.py": "import textual\nfrom localspec.agent import Agent, Done\n"})
    proc = lint(tmp_path, config, tmp_path / "src")
    assert proc.returncode == 0, proc.stdout + proc.stderr
