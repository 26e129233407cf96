"""config.toml: the user's settings, validated by pydantic, with LOCALSPEC_-prefixed environment overrides (read by
pydantic-settings).

Keys are dotted ("sampling.temperature"); the environment name is LOCALSPEC_ + the key in capitals with dots as
underscores (LOCALSPEC_SAMPLING_TEMPERATURE). Overrides apply when loading, never when saving, so a one-off
`LOCALSPEC_THEME=... localspec` does not rewrite the file. Tuning values left unset (None) fall back to the
chosen pair's catalog hints, then to built-in defaults (see Settings.tuning).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model
from pydantic_settings import BaseSettings, SettingsConfigDict

from localspec.constants import ENV_PREFIX
from localspec.errors import ConfigError
from localspec.models import tomlio
from localspec.models.catalog import Hints
from localspec.models.paths import get_paths

_NONE_WORDS = {"", "none", "null", "unset"}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)


class Drafters(_Section):
    """Which drafters speculative decoding may use."""

    model: bool = True  # the draft model of the pair
    schema_: bool = Field(True, alias="schema")  # tool-call JSON forced by the schema, and which tool a call names
    history: bool = True  # earlier tool calls, this session's and the stored ones (agent/drafting_memory.py)
    ngram: bool = True  # lookups in the request: token and text n-grams, spans, copies across JSON escaping
    head: bool = True  # the target's draft head: its MTP layers, or an EAGLE-3/DFlash file named as the draft
    mtp: bool = True  # ... including the target's own MTP layers (off: not loaded; `--no-mtp`)


class Sampling(_Section):
    """The one set of sampling defaults: `run`, `serve` and the app all start from these values.

    Greedy by default: speculative output is then exactly the target's own, and replies are reproducible; the
    filters apply once a temperature above 0 is set."""

    temperature: Annotated[float, Field(ge=0.0, le=5.0)] = 0.0
    top_k: Annotated[int, Field(ge=0)] = 40
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = 0.95
    min_p: Annotated[float, Field(ge=0.0, le=1.0)] = 0.05
    seed: int | None = None  # None: random


class Reasoning(_Section):
    """Reasoning models (Qwen3, DeepSeek-R1 distills): whether they think before answering by default (the template's
    enable_thinking, or /no_think where it has none). Ctrl+R in the app and `run --no-thinking` switch it per use."""

    thinking: bool = True


class Backend(_Section):
    """Where generation runs: the local llama.cpp engine, or an OpenAI-compatible server."""

    kind: Literal["local", "openai"] = "local"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None


def _names_text(value: Any) -> Any:
    """A TOML list ["HF_TOKEN", "AWS_*"] is kept as the same comma-separated text the CLI and the form use."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v).strip() for v in value if str(v).strip())
    return value


class Tools(_Section):
    """Local tools. enabled: new chats in the app offer the tools to the model (F6 switches a chat's; off, the prompt
    carries no tool definitions). env_allow: secret-looking environment variables run_shell may still see
    ("HF_TOKEN,AWS_*")."""

    enabled: bool = True
    env_allow: Annotated[str, BeforeValidator(_names_text)] = ""

    def env_allow_names(self) -> list[str]:
        return [n.strip() for n in self.env_allow.split(",") if n.strip()]


class Settings(_Section):
    default_pair: str | None = None  # None: the first installed pair, else the demo model
    target_gpu_layers: Annotated[int, Field(ge=-1)] | None = None  # -1: all; None: the pair's hint
    draft_gpu_layers: Annotated[int, Field(ge=-1)] | None = None
    draft_max: Annotated[int, Field(ge=1, le=64)] | None = None  # draft length; None: the pair's hint
    draft_p_min: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    ctx_size: Annotated[int, Field(ge=16)] | None = None  # context window in tokens; None: 8192 (or the model's)
    threads: Annotated[int, Field(ge=0)] | None = None  # CPU threads; None or 0: one per core (the app: but one)
    approval: Literal["ask", "read-only", "auto"] = "ask"
    theme: str = "textual-dark"
    drafters: Drafters = Field(default_factory=Drafters)
    sampling: Sampling = Field(default_factory=Sampling)
    reasoning: Reasoning = Field(default_factory=Reasoning)
    backend: Backend = Field(default_factory=Backend)
    tools: Tools = Field(default_factory=Tools)
    # pair name -> a template family (prompting/families.py) or a Jinja file, for GGUFs whose own is missing or wrong
    chat_templates: dict[str, str] = Field(default_factory=dict)

    def tuning(self, hints: Hints | None = None) -> "Tuning":
        """Effective draft length, acceptance threshold and GPU layers: config, else pair hints, else defaults."""
        h = hints or Hints(memory_mb=1)

        def pick(mine, hinted):
            return hinted if mine is None else mine

        return Tuning(draft_max=pick(self.draft_max, h.draft_max), draft_p_min=pick(self.draft_p_min, h.draft_p_min),
                      target_gpu_layers=pick(self.target_gpu_layers, h.target_gpu_layers),
                      draft_gpu_layers=pick(self.draft_gpu_layers, h.draft_gpu_layers))

    def get(self, key: str) -> Any:
        table, _, entry = key.partition(".")
        if table in TABLES:
            return getattr(self, table).get(entry)
        section, _, field = key.rpartition(".")
        obj = getattr(self, section) if section else self
        return getattr(obj, _attr(type(obj), field))

    def as_dict(self) -> dict[str, Any]:
        """Nested plain dict with the file's key names ("schema", not "schema_")."""
        return self.model_dump(by_alias=True)


@dataclass(frozen=True)
class Tuning:
    draft_max: int
    draft_p_min: float
    target_gpu_layers: int
    draft_gpu_layers: int


def _attr(model: type[BaseModel], name: str) -> str:
    for attr, info in model.model_fields.items():
        if name in (attr, info.alias):
            return attr
    raise KeyError(name)


TABLES = ("chat_templates",)  # free-form tables: any name is a key ("chat_templates.qwen3-1.7b")


def config_keys() -> list[str]:
    """Every fixed settable key, dotted ("sampling.temperature"); the TABLES' entries come on top."""
    keys = []
    for attr, info in Settings.model_fields.items():
        if attr in TABLES:
            continue
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            keys += [f"{info.alias or attr}.{i.alias or a}" for a, i in sub.model_fields.items()]
        else:
            keys.append(info.alias or attr)
    return keys


def env_name(key: str) -> str:
    return ENV_PREFIX + key.upper().replace(".", "_")


def _first(e: ValidationError) -> tuple[str, str]:
    first = e.errors()[0]
    msg = first["msg"]
    return ".".join(str(p) for p in first["loc"]) or "config", msg[0].lower() + msg[1:]


def _error(e: ValidationError, source: str) -> ConfigError:
    loc, msg = _first(e)
    return ConfigError(f"{source}: {loc}: {msg}")


def _set_raw(raw: dict[str, Any], key: str, value: Any) -> None:
    section, _, field = key.partition(".") if key.partition(".")[0] in TABLES else key.rpartition(".")
    target = raw.setdefault(section, {}) if section else raw
    if not isinstance(target, dict):
        raise ConfigError(f"config: {section} must be a table")
    if value is None:
        target.pop(field, None)
        if section and not target:
            raw.pop(section, None)
    else:
        target[field] = value


def _check_key(key: str) -> None:
    section, _, name = key.partition(".")
    if section in TABLES and name:
        return
    if key not in config_keys():
        raise ConfigError(f"unknown config key {key!r} (keys: {', '.join(config_keys())})")


def _parse(key: str, text: str) -> str | None:
    """A command-line or environment string for `key`: "none" clears an optional value, pydantic coerces the rest."""
    return None if text.strip().lower() in _NONE_WORDS else text


def config_path() -> Path:
    return get_paths().config_file


def mcp_config_path() -> Path:
    """mcp.json: the MCP servers whose tools the agent may use (localspec.mcp reads it), beside config.toml."""
    return get_paths().config_dir / "mcp.json"


def _read_raw(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        return tomlio.loads(path.read_text(encoding="utf-8"))
    except tomlio.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None


class _EnvVariables(BaseSettings):
    """The LOCALSPEC_<KEY> variables, read by pydantic-settings: one text field per config key (_env_model adds
    them), named exactly by env_name. Raw text only: the values are checked with the file's, by Settings."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore")


@functools.lru_cache(maxsize=1)
def _env_model() -> type[_EnvVariables]:
    fields: dict[str, Any] = {key.replace(".", "__"): (str | None, Field(None, validation_alias=env_name(key)))
                              for key in config_keys()}
    return create_model("LocalspecEnvironment", __base__=_EnvVariables, **fields)


def env_overrides(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """{key: raw value} for every LOCALSPEC_<KEY> variable that names a config key (`env`: instead of the process
    environment)."""
    model = _env_model()
    found = model() if env is None else model.model_validate(dict(env))
    values = found.model_dump(exclude_unset=True)
    return {key: values[key.replace(".", "__")] for key in config_keys() if key.replace(".", "__") in values}


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None, *,
                apply_env: bool = True) -> Settings:
    """The effective settings: defaults < config.toml < LOCALSPEC_* environment variables."""
    path = path or config_path()
    raw = _read_raw(path)
    try:
        Settings.model_validate(raw)
    except ValidationError as e:
        raise _error(e, path.name) from None
    if apply_env:
        for key, text in env_overrides(env).items():
            _set_raw(raw, key, _parse(key, text))
            try:
                Settings.model_validate(raw)
            except ValidationError as e:
                raise ConfigError(f"{env_name(key)}={text!r}: {_first(e)[1]}") from None
    return Settings.model_validate(raw)


def save_config(settings: Settings, path: Path | None = None) -> Path:
    """Write the values that differ from the defaults (so later default changes still reach the user)."""
    path = path or config_path()
    data = settings.model_dump(by_alias=True, exclude_defaults=True)
    tomlio.write_atomic(path, tomlio.dumps(data, header="localspec settings (`localspec config set KEY VALUE`)."))
    return path


def set_config_value(key: str, value: Any, path: Path | None = None) -> Settings:
    """Set one key in config.toml (strings are coerced; None or "none" clears it back to its default)."""
    _check_key(key)
    path = path or config_path()
    raw = _read_raw(path)
    _set_raw(raw, key, _parse(key, value) if isinstance(value, str) else value)
    try:
        stored = Settings.model_validate(raw)
    except ValidationError as e:
        raise _error(e, "config") from None
    save_config(stored, path)
    return load_config(path)
