"""Which backend generates: the local llama.cpp engine, or an OpenAI-compatible server (vLLM, llama-server, another
localspec serve), resolved once from the flags (--backend, --base-url, --model, --api-key), then config.toml's
[backend] table (backend.kind, backend.base_url, backend.model, backend.api_key, and their LOCALSPEC_BACKEND_*
overrides), then the environment's key (LOCALSPEC_REMOTE_API_KEY, OPENAI_API_KEY).

Every front end asks here first: the agent loop (`run --tools`), `run`, the app and `serve` then run their turns on
the server instead of opening a local pair (remote/turns.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from localspec.constants import ENV_OPENAI_API_KEY, ENV_REMOTE_API_KEY
from localspec.errors import ConfigError
from localspec.launch.flags import RunFlags
from localspec.settings.config_toml import Settings

KEY_ENV = (ENV_REMOTE_API_KEY, ENV_OPENAI_API_KEY)
KINDS = ("local", "openai")


@dataclass(frozen=True)
class RemoteConfig:
    base_url: str
    model: str | None  # None: the server's first listed model
    api_key: str | None


def resolve_remote(flags: RunFlags, settings: Settings, env=None) -> RemoteConfig | None:
    """The server to use, or None for the local engine. A one-line error for an openai backend without a URL."""
    env = os.environ if env is None else env
    kind = flags.backend or settings.backend.kind
    if kind not in KINDS:
        raise ConfigError(f"--backend must be one of {', '.join(KINDS)}, not {kind!r}")
    if kind != "openai":
        return None
    url = flags.base_url or settings.backend.base_url
    if not url:
        raise ConfigError("the openai backend needs the server's address: --base-url URL (e.g. "
                          "http://localhost:8000/v1), or `localspec config set backend.base_url URL`")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"the backend's base URL must start with http:// or https://, not {url!r}")
    local_only = [flag for flag, given in (("--target", flags.target), ("--draft", flags.draft)) if given]
    if local_only:
        raise ConfigError(f"{', '.join(local_only)} only apply to the local backend")
    key = flags.api_key or settings.backend.api_key or next((env[k] for k in KEY_ENV if env.get(k)), None)
    return RemoteConfig(url, flags.remote_model or settings.backend.model, key)
