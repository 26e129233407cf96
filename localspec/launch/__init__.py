"""Session assembly, once for every front end: the user's flags, config.toml and the pair's hints resolved into one
frozen RunConfig, and the one function that opens a pair and builds its engine from it (run, run --tools, serve,
the app and the bench all call it)."""

from localspec.launch.flags import RunFlags
from localspec.launch.open import Opened, open_engine, open_pair
from localspec.launch.run_config import RunConfig, resolve_config

__all__ = ["Opened", "RunConfig", "RunFlags", "open_engine", "open_pair", "resolve_config"]
