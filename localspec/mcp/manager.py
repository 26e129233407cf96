"""The MCP servers of one session: started together when the session needs tools, their tools offered to the
Toolbox (a ToolSource), shut down with the session.

    with McpTools(load_mcp_config(path), on_notice=print) as mcp:
        mcp.start()                 # in the background; wait() blocks until each server runs or has failed
        toolbox.add_source(mcp)
        ...                         # agent runs; MCP tools go through Toolbox.call like the built-ins

Approvals: annotations are the server's claims, believed only when the user marked the server "trusted": true in
mcp.json (the MCP specification's rule). A trusted server's tool with readOnlyHint: true is kind "read" (runs in
every mode, like read_file); every other tool is kind "write" (ask asks, read-only refuses, auto runs), rated at
least medium unless a trusted server says it is not destructive. "Always" is remembered as SERVER:TOOL.
A server that fails to start or dies is reported once through on_notice (one line) and its tools leave the list.
"""

from __future__ import annotations

import atexit
import json
import threading
import weakref
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict

from localspec.mcp.adapter import assign_names, clean_description, clean_schema, to_tool_result
from localspec.mcp.connection import FAILED, OFF, RUNNING, STARTING, Connection
from localspec.mcp.event_loop import LoopThread
from localspec.mcp.failures import describe
from localspec.mcp.servers_file import McpConfig
from localspec.tools.safety.danger import LOW, MEDIUM, Danger
from localspec.tools.tool_result import ToolResult, one_line
from localspec.tools.toolbox import Action, ToolDef

Notice = Callable[[str], None]


class AnyArguments(BaseModel):
    """MCP arguments are checked by the call grammar (the server's schema) and by the server itself."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ServerStatus:
    """What a UI shows about one server."""

    name: str
    state: str  # starting | running | failed | stopped | off
    error: str | None
    transport: str  # stdio | http
    where: str  # command line or URL
    tools: tuple[str, ...]  # the names the model sees
    skipped: tuple[str, ...]  # tools left out, with why
    log: str | None


class McpTools:
    def __init__(self, config: McpConfig, *, log_dir: Path | None = None, on_notice: Notice | None = None) -> None:
        self.config = config
        self.on_notice = on_notice
        self._runner: LoopThread | None = None
        self._log_dir = log_dir if log_dir is not None else _default_log_dir()
        self._log_root = self._log_dir.parent if log_dir is None and self._log_dir is not None else None
        self._lock = threading.RLock()
        self._conns: dict[str, Connection | None] = {s.name: None for s in config.servers}
        self._pending: list = []
        self._defs: list[ToolDef] | None = None  # cache; cleared whenever a server's state changes
        self._reserved: frozenset[str] = frozenset()
        self._skipped: dict[str, list[str]] = {}
        self._told: set[str] = set()  # notices already given (a rebuilt tool list must not repeat them)
        self._closed = False
        _live.add(self)

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start every enabled server in the background (idempotent)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("McpTools is closed")
            for server in self.config.servers:
                if self._conns.get(server.name) is None:
                    conn = Connection(server, self._loop(), log_dir=self._log_dir, log_root=self._log_root,
                                      on_state=self._state_changed)
                    self._conns[server.name] = conn
                    if not server.disabled:
                        self._pending.append(conn.start())

    def wait(self, timeout: float | None = None) -> None:
        """Block until every starting server runs or has failed."""
        with self._lock:
            pending, self._pending = self._pending, []
        if pending:
            wait_futures(pending, timeout)

    def close(self) -> None:
        """Stop every server (and what it left running) and the event-loop thread. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns = [c for c in self._conns.values() if c is not None]
        for conn in conns:
            conn.on_state = None  # shutting down is not news
        stopping = [f for f in (c.begin_stop() for c in conns) if f is not None]  # all at once: each may take
        wait_futures(stopping, 15.0)  # the SDK's grace period before it kills a server that does not exit
        for conn in conns:
            for note in conn.end_stop():  # a process that could not be stopped is news, even now
                self._tell_once(note)
        if self._runner is not None:
            self._runner.stop()
        _live.discard(self)

    def __enter__(self) -> "McpTools":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Switch a server off (stopped, its tools gone) or on again (restarted) for this session."""
        with self._lock:
            conn = self._conns.get(name)
            if conn is None and name not in self._conns:
                raise KeyError(name)
            if conn is None:
                self.start()
                conn = self._conns[name]
                assert conn is not None  # start() made one for every server
        if not enabled:
            for note in conn.switch_off():
                self._tell_once(note)
        elif conn.state not in (RUNNING, STARTING):
            conn.start().result(conn.config.startup_timeout_s + 10)
        self._invalidate()

    # -- what the Toolbox and the UIs ask ----------------------------------------------------------------------
    def tool_defs(self, reserved: set[str]) -> list[ToolDef]:
        with self._lock:
            if self._defs is None or self._reserved != frozenset(reserved):
                self._reserved = frozenset(reserved)
                self._defs = self._build_defs(reserved)
            return list(self._defs)

    def servers(self) -> list[ServerStatus]:
        names: dict[str, list[str]] = {}
        for d in self.tool_defs(set(self._reserved)):
            names.setdefault(d.source, []).append(d.name)
        out = []
        for server in self.config.servers:
            conn = self._conns.get(server.name)
            state = conn.state if conn is not None else (OFF if server.disabled else "stopped")
            out.append(ServerStatus(
                name=server.name, state=state, error=conn.error if conn is not None else None,
                transport=server.transport, where=server.where, tools=tuple(names.get(f"mcp:{server.name}", ())),
                skipped=tuple(self._skipped.get(server.name, ())),
                log=str(conn.log_path) if conn is not None and conn.log_path else None))
        return out

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool on its server; every failure is a ToolResult error naming the server and the tool."""
        conn = self._conns.get(server)
        where = f"MCP server {server!r}"
        if conn is None or conn.state != RUNNING:
            state = conn.state if conn is not None else "not started"
            detail = f": {conn.error}" if conn is not None and conn.error else ""
            return ToolResult.failure(f"{where} is not running ({state}{detail})")
        try:
            result = conn.call(tool, arguments)
        except TimeoutError as exc:
            return ToolResult.failure(f"{where} did not answer {tool} within {conn.config.timeout_s:g}s "
                                      f"({one_line(str(exc)) or 'timed out'}); the call was abandoned")
        except BaseException as exc:  # noqa: BLE001 - a server's failure is the call's result, never a crash
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            reason = describe(exc, conn.stderr_tail())
            if _connection_lost(exc):
                conn.mark_dead(reason)
                return ToolResult.failure(f"{where} stopped while running {tool}: {reason}")
            return ToolResult.failure(f"{where}: {tool} failed: {reason}")
        return to_tool_result(result)

    # -- internals ------------------------------------------------------------------------------------------------
    def _loop(self) -> LoopThread:
        if self._runner is None or not self._runner.alive:
            self._runner = LoopThread()
        return self._runner

    def _state_changed(self, conn: Connection) -> None:
        self._invalidate()
        if conn.state == FAILED and self.on_notice is not None:
            error = conn.error or "failed"
            if error.startswith("stopped"):
                self.on_notice(f"MCP server {conn.name!r} {error}; its tools are no longer available")
            else:
                self.on_notice(f"MCP server {conn.name!r} failed to start: {error}; its tools are not available")

    def _tell_once(self, message: str) -> None:
        if message not in self._told and self.on_notice is not None:
            self._told.add(message)
            self.on_notice(message)

    def _invalidate(self) -> None:
        with self._lock:
            self._defs = None

    def _build_defs(self, reserved: set[str]) -> list[ToolDef]:
        running = [c for c in self._conns.values() if c is not None and c.state == RUNNING]
        usable: list[tuple[Connection, Any, dict]] = []
        self._skipped = {}
        for conn in running:
            for tool in conn.tools:
                schema, why = clean_schema(tool.input_schema)
                if schema is None:
                    self._skipped.setdefault(conn.name, []).append(f"{tool.name}: {why}")
                    self._tell_once(f"MCP server {conn.name!r}: tool {tool.name!r} left out: {why}")
                    continue
                usable.append((conn, tool, schema))
        listing: dict[str, list[str]] = {}
        for conn, tool, _ in usable:
            listing.setdefault(conn.name, []).append(tool.name)
        names = assign_names(listing.items(), reserved)
        defs = []
        for conn, tool, schema in usable:
            name = names.get((conn.name, tool.name))
            if name is None:
                self._skipped.setdefault(conn.name, []).append(f"{tool.name}: its name has no usable characters")
                continue
            read_only = tool.read_only and conn.config.trusted  # an untrusted server's hint is only a claim
            defs.append(ToolDef(name, clean_description(tool.description) or f"{tool.name} ({conn.name})",
                                AnyArguments, "read" if read_only else "write",
                                self._planner(conn.name, tool, conn.config.trusted), parameters=schema,
                                source=f"mcp:{conn.name}"))
        return defs

    def _planner(self, server: str, tool, trusted: bool):
        def plan(_toolbox, parsed: AnyArguments) -> Action:
            arguments = parsed.model_dump()
            shown = json.dumps(arguments, ensure_ascii=False)
            shown = shown if len(shown) <= 300 else shown[:297] + "..."
            if trusted and tool.read_only:
                danger = Danger(LOW)
            elif not trusted:
                danger = Danger(MEDIUM, (f"MCP tool {tool.name} of server {server!r}, which is not marked trusted "
                                         "in mcp.json: what it says about itself (read-only, not destructive) is "
                                         "not believed",))
            elif tool.destructive:
                danger = Danger(MEDIUM, (f"MCP tool {tool.name} of server {server!r} may change things "
                                         "(it does not declare itself read-only)",))
            else:
                danger = Danger(LOW, (f"MCP tool {tool.name} of server {server!r} only adds (not destructive)",))
            return Action(lambda: self.call(server, tool.name, arguments), summary=f"MCP {server}: {tool.name} {shown}",
                          danger=danger, patterns=(f"{server}:{tool.name}",))
        return plan


def attach_servers(toolbox, path=None, on_notice: Notice | None = None) -> McpTools | None:
    """Start the servers of mcp.json (or `path`) in the background and offer their tools through `toolbox`; None
    when none is configured. The caller calls .wait() before relying on the tools and .close() at the end."""
    from localspec.mcp.servers_file import load_mcp_config

    config = load_mcp_config(path)  # ConfigError (one line) before anything starts
    if not config.enabled() and not config.servers:
        return None
    mcp = McpTools(config, on_notice=on_notice)
    mcp.start()
    toolbox.add_source(mcp)
    return mcp


def _connection_lost(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    from localspec.mcp.failures import leaf, lost_connection

    exc = leaf(exc)
    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, (EOFError, OSError, *lost_connection()))


def _default_log_dir() -> Path | None:
    try:
        from localspec.models.paths import get_paths

        return get_paths().log_dir / "mcp"
    except Exception:
        return None


# Servers still running when the interpreter exits (a caller forgot close(), or an uncaught error) are stopped.
_live: "weakref.WeakSet[McpTools]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for tools in list(_live):
        try:
            tools.close()
        except Exception:
            pass
