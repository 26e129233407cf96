"""Where localspec keeps its files.

platformdirs gives the per-OS folders; LOCALSPEC_HOME (tests, portable installs) puts all of them
under one folder instead, so a test or a USB-stick install never touches the user's real folders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import platformdirs

from localspec.constants import ENV_HOME

APP = "localspec"


@dataclass(frozen=True)
class Paths:
    config_dir: Path
    data_dir: Path
    cache_dir: Path
    log_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def models_dir(self) -> Path:
        # Models are data, not cache: a cache cleaner must not delete gigabytes the user downloaded on purpose.
        return self.data_dir / "models"

    @property
    def registry_file(self) -> Path:
        return self.data_dir / "registry.json"


def get_paths(env: Mapping[str, str] | None = None) -> Paths:
    """The folders for this process (read at call time, so a changed LOCALSPEC_HOME takes effect)."""
    env = os.environ if env is None else env
    home = env.get(ENV_HOME)
    if home:
        root = Path(home).expanduser().resolve()
        return Paths(root / "config", root / "data", root / "cache", root / "logs")
    dirs = platformdirs.PlatformDirs(APP, appauthor=False)
    return Paths(dirs.user_config_path, dirs.user_data_path, dirs.user_cache_path, dirs.user_log_path)
