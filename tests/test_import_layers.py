"""scripts/check_imports.py: localspec/ has no import cycles and no layer importing one above it; and the checker
really does fail on a cycle (also one hidden inside a function, or through a package's re-export) and on a layer
arrow pointing the wrong way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_imports.py"


def check(package: Path | None = None) -> subprocess.CompletedProcess:
    args = [sys.executable, str(SCRIPT)] + ([str(package)] if package else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_localspec_imports_point_one_way():
    proc = check()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no cycles" in proc.stdout


def make_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "localspec"
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("files, needle", [
    # Two modules that import each other, one of them only inside a function: still a cycle.
    ({"commands/__init__.py": "", "commands/run.py": "from localspec.commands import agent_run\n",
      "commands/agent_run.py": "def f():\n    from localspec.commands.run import g\n"},
     "cycle: localspec.commands.agent_run -> localspec.commands.run -> localspec.commands.agent_run"),
    # A longer loop, written with relative imports.
    ({"a.py": "from . import b\n", "b.py": "from .c import x\n", "c.py": "import localspec.a\n"},
     "cycle: localspec.a -> localspec.b -> localspec.c -> localspec.a"),
    # Through a package re-export: `from localspec.agent import Agent` is localspec.agent.loop.
    ({"agent/__init__.py": "from .loop import Agent\n", "agent/loop.py": "from localspec.tools.box import T\n",
      "tools/__init__.py": "", "tools/box.py": "def f():\n    from localspec.agent import Agent\n"},
     "cycle: localspec.agent.loop -> localspec.tools.box -> localspec.agent.loop"),
])
def test_a_cycle_fails(tmp_path, files, needle):
    proc = check(make_package(tmp_path, files))
    assert proc.returncode == 1
    assert needle in proc.stdout, proc.stdout


@pytest.mark.parametrize("files, needle", [
    ({"speculative/__init__.py": "", "speculative/engine.py": "def f():\n    import localspec.agent.loop\n",
      "agent/__init__.py": "", "agent/loop.py": ""},
     "layer: localspec.speculative.engine imports localspec.agent.loop"),
    ({"runtime/__init__.py": "", "runtime/model.py": "from localspec.models.paths import p\n",
      "models/__init__.py": "", "models/paths.py": ""},
     "layer: localspec.runtime.model imports localspec.models.paths"),
    ({"tools/__init__.py": "", "tools/files.py": "from localspec.commands.helpers import x\n",
      "commands/__init__.py": "", "commands/helpers.py": ""},
     "layer: localspec.tools.files imports localspec.commands.helpers"),
    ({"agent/__init__.py": "", "agent/loop.py": "from textual.app import App\n"},
     "layer: localspec.agent.loop imports textual"),
])
def test_a_layer_breach_fails(tmp_path, files, needle):
    proc = check(make_package(tmp_path, files))
    assert proc.returncode == 1
    assert needle in proc.stdout, proc.stdout


def test_an_init_reexporting_its_own_modules_is_not_a_cycle(tmp_path):
    proc = check(make_package(tmp_path, {
        "agent/__init__.py": "from .events import Done\nfrom .loop import Agent\n",
        "agent/events.py": "", "agent/loop.py": "from .events import Done\nfrom localspec.agent import events\n",
        "tui/__init__.py": "", "tui/app.py": "import textual\nfrom localspec.agent import Agent, Done\n"}))
    assert proc.returncode == 0, proc.stdout
