"""What is installed: verified downloads and user-registered pairs, kept in <data>/registry.json.

A file is recorded only after it is complete and its checksum matched, so nothing half-downloaded is ever listed.
Status is re-checked against the disk on every read (a file deleted by hand shows as "missing").
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Literal

from filelock import FileLock  # a dependency of huggingface_hub
from pydantic import BaseModel, Field, ValidationError

from localspec.errors import ConfigError
from localspec.models import tomlio
from localspec.private_files import private_dir

Status = Literal["ok", "missing", "modified"]


class InstalledFile(BaseModel):
    repo: str | None  # None for a local file registered with `localspec add`
    file: str
    path: str
    size: int
    sha256: str | None
    revision: str | None = None
    commit: str | None = None
    rel: str | None = None  # for downloads: the path inside <data>/models, so a moved LOCALSPEC_HOME still works

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.repo, self.file)

    def status(self) -> Status:
        p = Path(self.path)
        try:
            st = p.stat()
        except OSError:
            return "missing"
        return "ok" if st.st_size == self.size else "modified"

    def public(self) -> dict:
        """The `models --json` shape: {"repo", "file", "path", "size", "sha256"} plus the status."""
        return {"repo": self.repo, "file": self.file, "path": self.path, "size": self.size, "sha256": self.sha256,
                "status": self.status()}


class UserPair(BaseModel):
    target: str
    draft: str | None = None
    translated: bool = False  # the draft is of another family: it drafts through text (runtime/compat.py)


class Registry(BaseModel):
    version: int = 1
    files: list[InstalledFile] = Field(default_factory=list)
    pairs: dict[str, UserPair] = Field(default_factory=dict)

    def find(self, repo: str | None, file: str) -> InstalledFile | None:
        for f in self.files:
            if f.key == (repo, file):
                return f
        return None

    def find_path(self, path: str | Path) -> InstalledFile | None:
        p = str(Path(path).resolve())
        return next((f for f in self.files if f.path == p), None)

    def usable(self, repo: str | None, file: str) -> InstalledFile | None:
        f = self.find(repo, file)
        return f if f is not None and f.status() == "ok" else None

    def put_file(self, entry: InstalledFile) -> None:
        self.files = [f for f in self.files if f.key != entry.key and f.path != entry.path] + [entry]

    def drop_file(self, repo: str | None, file: str) -> InstalledFile | None:
        found = self.find(repo, file)
        self.files = [f for f in self.files if f.key != (repo, file)]
        return found


def load_registry(path: Path) -> Registry:
    if not path.exists():
        return Registry()
    try:
        registry = Registry.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as e:
        raise ConfigError(f"{path}: unreadable registry ({str(e).splitlines()[0]}); move it away to start afresh") \
            from None
    for f in registry.files:
        if f.rel is not None:
            f.path = str(path.parent / "models" / f.rel)
    return registry


def save_registry(path: Path, registry: Registry) -> None:
    tomlio.write_atomic(path, json.dumps(registry.model_dump(), indent=1) + "\n")


@contextmanager
def update_registry(path: Path) -> Iterator[Registry]:
    """Load, let the caller change, save: under a lock, so two concurrent pulls do not lose each other's entries."""
    private_dir(path.parent)  # the data folder: private (it holds conversations too)
    with FileLock(str(path) + ".lock"):
        registry = load_registry(path)
        yield registry
        save_registry(path, registry)
