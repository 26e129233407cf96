"""The catalog of model pairs (models.toml): pydantic-validated, with errors that name the entry and field.

The canonical file is models.toml at the top of the source tree; the wheel carries a byte-identical copy in
localspec/data/ (a test keeps the two equal). LOCALSPEC_CATALOG points at another file (tests, private mirrors).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from localspec.constants import ENV_CATALOG
from localspec.errors import ConfigError
from localspec.models import tomlio

DEMO = "demo"  # the packaged demo model's pair name (see resolve.demo_selection); reserved for it

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Commit = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z._/-]+$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)  # a typo in models.toml is an error, not ignored


class ModelFile(_Strict):
    """One GGUF file on the hub."""

    repo: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")]
    file: Annotated[str, Field(min_length=6)]
    revision: Commit | None = None  # None: the repo's default branch ("main")
    size: Annotated[int, Field(gt=0)]  # bytes; exact where sha256 is given, otherwise approximate
    sha256: Sha256 | None = None  # None: verified against the hub's LFS ETag instead
    licence: Annotated[str, Field(min_length=1)]
    context_length: Annotated[int, Field(gt=0)]
    verified: bool  # repo and file name confirmed against public references when the entry was written
    note: str = ""
    # The draft head this file is or carries (runtime/head_files.py tells it from the file itself): "mtp" on a
    # target with MTP layers or an mtp-*.gguf, "eagle3" or "dflash" on a head file. Shown by `models`.
    head: Literal["mtp", "eagle3", "dflash"] | None = None

    @field_validator("file")
    @classmethod
    def _gguf(cls, v: str) -> str:
        if not v.endswith(".gguf") or v.startswith("/") or ".." in v.split("/"):
            raise ValueError("must be a relative .gguf file name")
        return v

    @property
    def key(self) -> tuple[str, str]:
        return (self.repo, self.file)


class Hints(_Strict):
    """Tuning hints: what to use for this pair when the user has not configured otherwise."""

    draft_max: Annotated[int, Field(ge=1, le=64)] = 8
    draft_p_min: Annotated[float, Field(ge=0.0, le=1.0)] = 0.75
    target_gpu_layers: int = -1  # -1: all layers
    draft_gpu_layers: int = -1
    memory_mb: Annotated[int, Field(gt=0)]  # approximate RAM/VRAM for both models at the default context


HEAD_NAMES = {"mtp": "MTP layers", "eagle3": "EAGLE-3 head", "dflash": "DFlash drafter"}


class Pair(_Strict):
    description: str
    target: ModelFile
    draft: ModelFile | None = None  # a draft model with the target's vocabulary (None: the target drafts alone)
    head: ModelFile | None = None  # a draft head file pulled beside the target (EAGLE-3, DFlash, mtp-*.gguf)
    hints: Hints

    @model_validator(mode="after")
    def _drafts(self) -> "Pair":
        if self.head is not None and self.head.head is None:
            raise ValueError("head: say which kind it is (head = \"mtp\", \"eagle3\" or \"dflash\")")
        return self

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files())

    def files(self) -> list[ModelFile]:
        """Each file once: the target, the draft model, the head (a draft equal to the target is the target)."""
        out: list[ModelFile] = []
        for f in (self.target, self.draft, self.head):
            if f is not None and all(f.key != g.key for g in out):
                out.append(f)
        return out

    def drafts_with(self) -> list[str]:
        """What drafts for this pair besides the request itself: the draft model, the target's MTP layers, a head."""
        out = []
        if self.draft is not None and self.draft.key != self.target.key:
            out.append(f"draft model {self.draft.file}")
        if self.target.head == "mtp":
            out.append("its MTP layers")
        if self.head is not None and self.head.head is not None:
            out.append(f"{HEAD_NAMES[self.head.head]} {self.head.file}")
        return out


class Catalog(_Strict):
    default: str
    pairs: dict[str, Pair]
    source: str = "models.toml"

    @field_validator("pairs")
    @classmethod
    def _names(cls, v: dict[str, Pair]) -> dict[str, Pair]:
        for name in v:
            if not name or not all(c.isalnum() or c in "._-" for c in name):
                raise ValueError(f"pair name {name!r} may only use letters, digits, '.', '_' and '-'")
        return v

    @model_validator(mode="after")
    def _default_exists(self) -> "Catalog":
        if self.default not in self.pairs:
            raise ValueError(f"pair {self.default!r} is not in the catalog")
        return self

    def get(self, name: str) -> Pair:
        try:
            return self.pairs[name]
        except KeyError:
            raise ConfigError(f"unknown pair {name!r} (catalog: {', '.join(self.pairs)})") from None

    def find_file(self, repo: str, file: str) -> ModelFile | None:
        for pair in self.pairs.values():
            for f in pair.files():
                if f.key == (repo, file):
                    return f
        return None

    def pull_hint(self, name: str | None = None) -> str:
        """The one command that gets a model, with its size: "`localspec pull qwen3-1.7b` (2,474 MB)"."""
        name = name or self.default
        return f"`localspec pull {name}` ({format_mb(self.get(name).size)})"


def format_mb(n: int) -> str:
    return f"{round(n / 1_000_000):,} MB"


def _describe(err: ValidationError, source: str) -> str:
    first = err.errors()[0]
    loc = [str(p) for p in first["loc"]]
    msg = first["msg"]
    msg = msg.removeprefix("Value error, ")
    msg = msg[0].lower() + msg[1:] if msg else "invalid"
    if first["type"] == "missing":
        msg = "field required"
    if len(loc) >= 2 and loc[0] == "pairs":
        where = f"pair '{loc[1]}'" + (f" {'.'.join(loc[2:])}" if len(loc) > 2 else "")
    else:
        where = ".".join(loc) or "default"  # the only whole-catalog check is that the default pair exists
    more = err.error_count() - 1
    return f"{source}: {where}: {msg}" + (f" (and {more} more error{'s' if more > 1 else ''})" if more else "")


def parse_catalog(text: str, source: str = "models.toml") -> Catalog:
    try:
        data: dict[str, Any] = tomlio.loads(text)
    except tomlio.TOMLDecodeError as e:
        raise ConfigError(f"{source}: invalid TOML: {e}") from None
    try:
        return Catalog.model_validate({**data, "source": source})
    except ValidationError as e:
        raise ConfigError(_describe(e, source)) from None


def catalog_path() -> Path | None:
    """models.toml to read: $LOCALSPEC_CATALOG, else the source checkout's top-level file, else None (packaged copy)."""
    env = os.environ.get(ENV_CATALOG)
    if env:
        return Path(env).expanduser()
    import localspec

    root = Path(localspec.__file__).resolve().parent.parent
    if (root / "models.toml").is_file() and (root / "pyproject.toml").is_file():
        return root / "models.toml"
    return None


def load_catalog(path: str | os.PathLike | None = None) -> Catalog:
    """Load and validate the catalog; ConfigError (one line, naming pair and field) when it is invalid."""
    p = Path(path) if path is not None else catalog_path()
    if p is None:
        text = resources.files("localspec").joinpath("data/models.toml").read_text(encoding="utf-8")
        return parse_catalog(text, "models.toml")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the catalog: {e.strerror or e}") from None
    return parse_catalog(text, p.name)
