"""The persisted tool-call history that every front end (run, serve, the app) drafts from and adds to."""

from __future__ import annotations

from localspec.models.paths import get_paths
from localspec.speculative.drafters.history import CallHistory


def call_history() -> CallHistory:
    paths = get_paths()
    return CallHistory(paths.call_history_file, within=paths.data_dir)
