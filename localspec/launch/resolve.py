"""Which model files a command runs on: explicit paths, a named pair, the configured default, or the demo model."""

from __future__ import annotations

from pathlib import Path

from localspec.errors import ConfigError, ModelFileError
from localspec.models.catalog import DEMO, Catalog, load_catalog
from localspec.models.install import check_gguf, pair_state
from localspec.models.paths import Paths, get_paths
from localspec.models.registry import load_registry
from localspec.models.selection import Selection, demo_model_path, demo_selection
from localspec.settings.config_toml import Settings, load_config


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
    if name not in catalog.pairs:  # a typo, or a pair `rm` took away: name every pair there is
        names = [*catalog.pairs, *registry.pairs, DEMO]
        raise ConfigError(f"unknown pair {name!r} (pairs: {', '.join(names)}; `localspec add NAME --target FILE` "
                          "adds your own)")
    cat = catalog.get(name)
    got = {f.key: registry.usable(f.repo, f.file) for f in cat.files()}
    if any(e is None for e in got.values()):
        raise _missing(name, catalog, offline)
    t = got[cat.target.key]
    assert t is not None
    dr = got[cat.draft.key] if cat.draft is not None and cat.draft.key != cat.target.key else None
    head = got[cat.head.key] if cat.head is not None else None
    return Selection(Path(t.path), d or (Path(dr.path) if dr else None), name, False, cat.hints,
                     head=Path(head.path) if head else None)


def check_head(path: str | Path) -> Path:
    """A head file for --head: a GGUF that is a draft head (EAGLE-3, DFlash, MTP layers alone), else one line."""
    from localspec.runtime.head_files import is_head_file

    p = check_gguf(path)
    if not is_head_file(p):
        raise ModelFileError(f"{p.name} is not a draft head (an EAGLE-3 or DFlash file, or an mtp-*.gguf): give a "
                             "draft model with --draft")
    return p


def resolve_models(pair: str | None, target: str | Path | None, draft: str | Path | None,
                   offline: bool) -> tuple[Path, Path | None]:
    """(target_path, draft_path or None) for a command that needs a model; see resolve_selection."""
    sel = resolve_selection(pair, target, draft, offline)
    return sel.target, sel.draft
