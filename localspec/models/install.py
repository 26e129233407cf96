"""Pull, add and remove models: the operations behind `localspec pull|add|rm` and the TUI's model screen."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from localspec.errors import ConfigError, DownloadError, ModelFileError
from localspec.models.catalog import DEMO, Catalog, Pair, format_mb, load_catalog
from localspec.models.paths import Paths, get_paths
from localspec.models.registry import InstalledFile, Registry, UserPair, load_registry, update_registry
from localspec.private_files import private_dir

# The hub client (huggingface_hub, ~0.3 s to import) is imported only when something is downloaded.


def _hub():
    from localspec.models import hub

    return hub


def check_compat(target: str | Path, draft: str | Path) -> str | None:
    """Why the draft's vocabulary is not the target's (it then drafts through text), None when it is;
    IncompatibleDraftError when a file has no vocabulary at all."""
    from localspec.runtime.compat import check_draft_compat

    return check_draft_compat(target, draft)


def check_gguf(path: str | Path) -> Path:
    """An existing, readable file that starts with the GGUF magic; ModelFileError otherwise."""
    p = Path(path).expanduser()
    try:
        with p.open("rb") as f:
            magic = f.read(4)
    except FileNotFoundError:
        raise ModelFileError(f"model file not found: {p}") from None
    except IsADirectoryError:
        raise ModelFileError(f"{p} is a folder, not a GGUF file") from None
    except OSError as e:
        raise ModelFileError(f"cannot read {p}: {e.strerror or e}") from None
    if magic != b"GGUF":
        raise ModelFileError(f"{p} is not a GGUF file")
    return p.resolve()


def installed_files(paths: Paths | None = None) -> list[InstalledFile]:
    return load_registry((paths or get_paths()).registry_file).files


def pair_state(pair: Pair, registry: Registry) -> str:
    """"installed" (every file present and intact), "partial" or "missing"."""
    have = [registry.usable(f.repo, f.file) is not None for f in pair.files()]
    return "installed" if all(have) else "partial" if any(have) else "missing"


def pull_file(repo: str, file: str, *, revision: str | None = None, sha256: str | None = None,
              offline: bool = False, progress=None, cancel: threading.Event | None = None,
              show_progress: bool = False, paths: Paths | None = None,
              catalog: Catalog | None = None) -> InstalledFile:
    """Download (or find installed) one hub file; returns its registry entry. DownloadError on any failure.

    progress: called with hub.Progress events; cancel: set it from another thread to stop (the partial is kept).
    """
    paths = paths or get_paths()
    known = (catalog or load_catalog()).find_file(repo, file)
    if known is not None and revision in (None, known.revision):
        revision, sha256 = revision or known.revision, sha256 or known.sha256
    entry = load_registry(paths.registry_file).usable(repo, file)
    if entry is not None and revision in (None, entry.revision, entry.commit) and sha256 in (None, entry.sha256):
        return entry
    hub = _hub()
    if hub.hub_offline(offline):
        raise DownloadError(f"offline: {repo}/{file} is not downloaded; run `localspec pull {repo} {file}` "
                            "when online")
    dest = paths.models_dir / repo / file
    private_dir(paths.models_dir, within=paths.data_dir)  # the data folder is private (it holds conversations too)
    got = hub.download_file(repo, file, dest, revision=revision, sha256=sha256, progress=progress, cancel=cancel,
                            show_progress=show_progress)
    entry = InstalledFile(repo=repo, file=file, path=str(got.path.resolve()), size=got.size, sha256=got.sha256,
                          revision=revision, commit=got.commit, rel=f"{repo}/{file}")
    with update_registry(paths.registry_file) as registry:
        registry.put_file(entry)
    return entry


@dataclass(frozen=True)
class PulledPair:
    name: str
    target: InstalledFile
    draft: InstalledFile | None  # None: the pair drafts without a draft model (its MTP layers, a head)
    head: InstalledFile | None = None  # the draft head pulled beside the target


def pull_pair(name: str, *, offline: bool = False, progress=None, cancel: threading.Event | None = None,
              show_progress: bool = False, paths: Paths | None = None, catalog: Catalog | None = None,
              compat: bool = True) -> PulledPair:
    """Download a catalog pair (target, then draft, then head) and check that the draft can speculate for the
    target."""
    paths = paths or get_paths()
    catalog = catalog or load_catalog()
    pair = catalog.get(name)
    registry = load_registry(paths.registry_file)
    missing = [f for f in pair.files() if registry.usable(f.repo, f.file) is None]
    if missing:
        hub = _hub()
        if hub.hub_offline(offline):
            raise DownloadError(f"offline: pair '{name}' is not downloaded (missing "
                                f"{', '.join(f.file for f in missing)}); run {catalog.pull_hint(name)} when online")
        # Refuse up front when the whole pair cannot fit, rather than after the first gigabytes.
        hub.check_disk_space(paths.models_dir, sum(f.size for f in missing), f"pair '{name}'")
    got = {}
    for f in pair.files():
        got[f.key] = pull_file(f.repo, f.file, revision=f.revision, sha256=f.sha256, offline=offline,
                               progress=progress, cancel=cancel, show_progress=show_progress, paths=paths,
                               catalog=catalog)
    target = got[pair.target.key]
    draft = got[pair.draft.key] if pair.draft is not None and pair.draft.key != pair.target.key else None
    if compat and draft is not None:
        check_compat(target.path, draft.path)
    return PulledPair(name, target, draft, got[pair.head.key] if pair.head is not None else None)


def add_pair(name: str, target: str | Path, draft: str | Path | None = None, *, paths: Paths | None = None,
             catalog: Catalog | None = None, compat: bool = True) -> UserPair:
    """Register local GGUF files as a named pair (compatibility checked); they are used in place, not copied."""
    paths = paths or get_paths()
    catalog = catalog or load_catalog()
    if not name or not all(c.isalnum() or c in "._-" for c in name):
        raise ConfigError(f"pair name {name!r} may only use letters, digits, '.', '_' and '-'")
    if name in catalog.pairs or name == DEMO:
        raise ConfigError(f"'{name}' is a {'catalog' if name in catalog.pairs else 'reserved'} pair name; "
                          "choose another name")
    t = check_gguf(target)
    d = check_gguf(draft) if draft is not None else None
    translated = compat and d is not None and check_compat(t, d) is not None
    pair = UserPair(target=str(t), draft=str(d) if d else None, translated=translated)
    with update_registry(paths.registry_file) as registry:
        registry.pairs[name] = pair
        for p in filter(None, (t, d)):
            if registry.find_path(p) is None:
                registry.put_file(InstalledFile(repo=None, file=p.name, path=str(p), size=p.stat().st_size,
                                                sha256=None))
    return pair


def _delete(path: Path) -> None:
    for p in (path, path.with_name(path.name + ".part"), path.with_name(path.name + ".part.json"),
              path.with_name(f".{path.name}.lock")):
        p.unlink(missing_ok=True)


def _in_use(registry: Registry, catalog: Catalog, path: str, skip: str) -> str | None:
    """The name of another installed pair that uses `path`, if any."""
    for name, up in registry.pairs.items():
        if name != skip and path in (up.target, up.draft):
            return name
    for name, pair in catalog.pairs.items():
        if name == skip or pair_state(pair, registry) != "installed":
            continue
        if any((e := registry.find(f.repo, f.file)) is not None and e.path == path for f in pair.files()):
            return name
    return None


def remove(name: str, filename: str | None = None, *, files: bool = False, paths: Paths | None = None,
           catalog: Catalog | None = None) -> list[str]:
    """Forget a pair (or, with `filename`, the file REPO_ID FILENAME); with files=True delete downloads too.

    Files another installed pair still uses are kept; files outside localspec's models folder (registered with
    `add`) are never deleted. Returns one line per thing done, for the user.
    """
    paths = paths or get_paths()
    catalog = catalog or load_catalog()
    models_dir = paths.models_dir.resolve()
    done: list[str] = []
    with update_registry(paths.registry_file) as registry:
        if filename is not None:
            entries = [registry.find(name, filename)]
            if entries[0] is None:
                raise ConfigError(f"{name}/{filename} is not installed")
        elif name in registry.pairs:
            up = registry.pairs.pop(name)
            done.append(f"removed pair '{name}'")
            entries = [registry.find_path(p) for p in (up.target, up.draft) if p]
        elif name in catalog.pairs:
            entries = [registry.find(f.repo, f.file) for f in catalog.pairs[name].files()]
            if not any(entries):
                raise ConfigError(f"pair '{name}' is not installed")
        else:
            known = ", ".join(list(registry.pairs) + [n for n, p in catalog.pairs.items()
                                                      if pair_state(p, registry) != "missing"]) or "none"
            raise ConfigError(f"nothing called {name!r} is installed (installed pairs: {known})")
        for e in filter(None, entries):
            user = _in_use(registry, catalog, e.path, skip=name) if filename is None else None
            if user is not None:
                done.append(f"kept {e.file} (used by pair '{user}')")
                continue
            registry.drop_file(e.repo, e.file)
            p = Path(e.path)
            managed = models_dir in p.resolve().parents
            if files and managed:
                _delete(p)
                done.append(f"deleted {p} ({format_mb(e.size)})")
            elif files:
                done.append(f"forgot {p} (kept: not in localspec's models folder)")
            else:
                done.append(f"forgot {e.file}" + (f" (file kept at {p}; add --files to delete it)" if managed else ""))
    return done
