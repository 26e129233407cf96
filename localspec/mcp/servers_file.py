"""mcp.json: the MCP servers whose tools join the agent's, in the format Claude Desktop, Claude Code and LM Studio
already use.

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]},
        "docs":  {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}

A server with "command" runs over stdio, one with "url" over streamable HTTP. `${VAR}` and `${VAR:-default}` in
command, args, env, url and headers are filled from the environment (as Claude Code does), so a token need not be
written into the file. Optional per server: "disabled": true, "timeout" (seconds per tool call), "startupTimeout"
(seconds to start and list tools), "cwd" (stdio), "trusted": true. Keys other clients add ("type", "alwaysAllow",
...) are ignored.

Paths are read as the user meant them when writing the file, not as wherever they run localspec: a relative
`command` (`bin/helper`, `./server.py`) or `cwd` is resolved against the folder of the mcp.json that names it (a
cloned repository in the working folder must not supply `bin/helper`); a bare name (`npx`) is looked up when the
server starts, in PATH without empty or relative entries (mcp/procs.py).

"trusted": the MCP specification calls a server's tool annotations (readOnlyHint, destructiveHint) untrusted
unless the server is trusted. So they are believed only for a server marked "trusted": true here; any other
server's tools are asked about like writes, and refused under --read-only.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TypedDict

from localspec.errors import ConfigError
from localspec.settings.config_toml import mcp_config_path

DEFAULT_TIMEOUT_S = 60.0  # one tool call
DEFAULT_STARTUP_S = 60.0  # `npx -y` may download the server on first use
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamable_http": "http",
          "streamablehttp": "http"}


@dataclass(frozen=True)
class ServerConfig:
    name: str
    command: str | None = None  # stdio
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None  # streamable HTTP
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    startup_timeout_s: float = DEFAULT_STARTUP_S
    disabled: bool = False
    trusted: bool = False  # the user vouches for the server's annotations (readOnlyHint, destructiveHint)

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def where(self) -> str:
        """One line for humans: the command line or the URL (never the env or headers: they may hold secrets)."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)


@dataclass(frozen=True)
class McpConfig:
    path: Path
    servers: tuple[ServerConfig, ...] = ()
    exists: bool = True

    def enabled(self) -> list[ServerConfig]:
        return [s for s in self.servers if not s.disabled]


class _Common(TypedDict):
    """ServerConfig's fields that every server has, whichever its transport."""

    name: str
    timeout_s: float
    startup_timeout_s: float
    disabled: bool
    trusted: bool


def default_config_path() -> Path:
    """mcp.json beside config.toml (LOCALSPEC_HOME honoured)."""
    return mcp_config_path()


def load_mcp_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> McpConfig:
    """The servers in `path` (a file the user named must exist) or in the default mcp.json (absent: none)."""
    explicit = path is not None
    p = Path(path).expanduser() if path is not None else default_config_path()
    if not p.is_file():
        if explicit:
            raise ConfigError(f"--mcp-config {p}: file not found")
        return McpConfig(p, (), exists=False)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        raw = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{p}: invalid JSON: {exc}") from None
    return McpConfig(p, parse_servers(raw, str(p), os.environ if env is None else env, base=p.resolve().parent))


def parse_servers(raw: Any, source: str, env: Mapping[str, str],
                  base: Path | None = None) -> tuple[ServerConfig, ...]:
    """The servers of a parsed mcp.json; `base`: the file's folder, against which relative paths are resolved
    (None: relative paths are refused)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a JSON object with \"mcpServers\"")
    servers = raw.get("mcpServers", raw.get("servers", {}))  # VS Code calls the same object "servers"
    if not isinstance(servers, dict):
        raise ConfigError(f"{source}: \"mcpServers\" must be an object of NAME: {{...}}")
    return tuple(_server(name, spec, f"{source}: server {name!r}", env, base) for name, spec in servers.items())


def _server(name: str, spec: Any, where: str, env: Mapping[str, str], base: Path | None = None) -> ServerConfig:
    if not _NAME.match(name):
        raise ConfigError(f"{where}: a server name may use letters, digits, '_', '-' and '.' (1-64 characters)")
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: expected an object with \"command\" or \"url\"")
    kind = spec.get("type")
    if kind is not None and (not isinstance(kind, str) or _TYPES.get(kind.lower()) is None):
        raise ConfigError(f"{where}: type {kind!r} is not supported (use stdio or http; SSE servers are not)")
    has_cmd, has_url = "command" in spec, "url" in spec
    if has_cmd == has_url:
        raise ConfigError(f"{where}: give either \"command\" (stdio) or \"url\" (streamable HTTP)")
    common = _Common(name=name, timeout_s=_seconds(spec, "timeout", DEFAULT_TIMEOUT_S, where),
                  startup_timeout_s=_seconds(spec, "startupTimeout", DEFAULT_STARTUP_S, where),
                  disabled=_bool(spec, "disabled", where), trusted=_bool(spec, "trusted", where))
    if has_cmd:
        command = _expand(_string(spec["command"], f"{where}: command"), env, where)
        if not command.strip():
            raise ConfigError(f"{where}: command is empty")
        args = spec.get("args", [])
        if not isinstance(args, list):
            raise ConfigError(f"{where}: args must be a list of strings")
        cwd = spec.get("cwd")
        args = tuple(_expand(_string(a, f"{where}: args"), env, where) for a in args)
        if cwd is not None:
            cwd = _anchored(_expand(_string(cwd, f"{where}: cwd"), env, where), base, f"{where}: cwd")
        if os.sep in command or (os.altsep and os.altsep in command):
            command = _anchored(command, base, f"{where}: command")
        return ServerConfig(command=command, args=args, env=_string_map(spec.get("env", {}), f"{where}: env", env),
                            cwd=cwd, **common)
    url = _expand(_string(spec["url"], f"{where}: url"), env, where)
    if not re.match(r"^https?://", url):
        raise ConfigError(f"{where}: url must start with http:// or https://")
    return ServerConfig(url=url, headers=_string_map(spec.get("headers", {}), f"{where}: headers", env), **common)


def _anchored(path: str, base: Path | None, where: str) -> str:
    """An absolute path: `~` expanded, a relative one joined to the config file's folder (never the working one)."""
    expanded = os.path.expanduser(path)
    if os.path.isabs(expanded):
        return expanded
    if base is None:
        raise ConfigError(f"{where} {path!r} is relative and there is no config file folder to resolve it against")
    return os.path.normpath(os.path.join(base, expanded))


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, not {type(value).__name__}")
    if "\x00" in value:
        raise ConfigError(f"{where} contains a NUL byte")
    return value


def _string_map(value: Any, where: str, env: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object of strings")
    return {_string(k, where): _expand(_string(v, f"{where}.{k}"), env, where) for k, v in value.items()}


def _seconds(spec: dict, key: str, default: float, where: str) -> float:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
        raise ConfigError(f"{where}: {key} must be a number of seconds between 0 and 86400")
    return float(value)


def _bool(spec: dict, key: str, where: str) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false")
    return value


def _expand(text: str, env: Mapping[str, str], where: str) -> str:
    """${VAR} and ${VAR:-default}; an unset variable without a default is an error (a silent "" would send an
    empty token)."""
    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ConfigError(f"{where}: environment variable {name} is not set (used as ${{{name}}})")
    return _VAR.sub(sub, text)
