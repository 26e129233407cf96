"""Model pairs: catalog (models.toml), downloads from the hub, installed registry, the demo model.

Public API (the CLI and TUI use these; nothing here imports huggingface_hub until a download starts):
  catalog:  load_catalog() -> Catalog (.pairs, .default, .get(name), .pull_hint(name)); Pair; ModelFile; Hints
  install:  pull_pair(name, ...), pull_file(repo, file, ...), add_pair(name, target, draft), remove(name, ...),
            installed_files(), pair_state(pair, registry)
  registry: load_registry(get_paths().registry_file) -> Registry (.files, .pairs, .usable(repo, file))
  selection: Selection (the files a command runs on: launch/resolve.py decides), demo_model_path()
  paths:    get_paths() -> Paths (config_dir, data_dir, cache_dir, log_dir, models_dir, config_file, registry_file)
"""

from localspec.models.catalog import Catalog, Hints, ModelFile, Pair, format_mb, load_catalog
from localspec.models.install import add_pair, installed_files, pair_state, pull_file, pull_pair, remove
from localspec.models.paths import Paths, get_paths
from localspec.models.registry import InstalledFile, Registry, UserPair, load_registry
from localspec.models.selection import Selection, demo_model_path

__all__ = [
    "Catalog", "Hints", "ModelFile", "Pair", "format_mb", "load_catalog",
    "add_pair", "installed_files", "pair_state", "pull_file", "pull_pair", "remove",
    "Paths", "get_paths", "InstalledFile", "Registry", "UserPair", "load_registry",
    "Selection", "demo_model_path",
]
