"""One MCP server: start it (stdio process or streamable-HTTP session) with the SDK's Client, list its tools,
call them with a timeout, and shut it down.

The Client's context (its transport tasks, the server process) lives in one asyncio task on the LoopThread for
the whole session, because anyio scopes must be left by the task that entered them; calls run as other tasks
on the same loop. When that task ends on its own, the server has gone away.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

from localspec.mcp import procs
from localspec.mcp.event_loop import LoopThread
from localspec.mcp.failures import ServerExited, describe
from localspec.mcp.procs import MARKER, marked
from localspec.mcp.servers_file import ServerConfig
from localspec.private_files import open_append
from localspec.tools.shell.environ import safe_path

# States of a server during a session.
STARTING, RUNNING, FAILED, STOPPED, OFF = "starting", "running", "failed", "stopped", "off"
MAX_TOOLS = 256  # a server listing more is cut here (the model could not use them all anyway)
MAX_PAGES = 32
WATCH_S = 2.0  # how often a running stdio server's processes are looked for
PROC = Path("/proc")

StateListener = Callable[["Connection"], None]
log = logging.getLogger("localspec.mcp")  # the servers' lifecycle, for the debug log (debug_log.py)


@dataclass(frozen=True)
class ServerTool:
    """A tool as the server lists it (its own name and schema)."""

    name: str
    description: str
    input_schema: dict
    read_only: bool  # the server's readOnlyHint (believed only for a server marked trusted)
    destructive: bool


class Connection:
    def __init__(self, config: ServerConfig, runner: LoopThread, *, log_dir: Path | None = None,
                 log_root: Path | None = None, on_state: StateListener | None = None) -> None:
        self.config = config
        self.runner = runner
        self.state = OFF if config.disabled else STOPPED
        self.error: str | None = None
        self.tools: list[ServerTool] = []
        self._log_dir = log_dir
        self._log_root = log_root  # localspec's log folder above log_dir: created and tightened with it
        self.on_state = on_state
        self._client = None
        self._task: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None
        self._token = secrets.token_hex(8)
        self._log: TextIO | None = None
        self._log_start = 0
        self.log_path: Path | None = None
        self._http_status: int | None = None  # the last HTTP error status (the SDK's error does not carry it)
        self._report: Path | None = None  # where the process wrapper says what it could not stop

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def _stopping(self) -> asyncio.Event:
        """The stop event of the current start (set by _start before _serve and _watch run)."""
        assert self._stop is not None
        return self._stop

    # -- lifecycle (called from any thread but the loop's) -----------------------------------------------------
    def start(self) -> concurrent.futures.Future:
        """Begin starting the server; the returned concurrent future completes when it runs or has failed."""
        self._set(STARTING, None)
        return self.runner.submit(self._start())

    def stop(self, timeout: float = 10.0) -> list[str]:
        """Shut the server down (its process tree too) and wait for it; what could not be stopped, in words."""
        future = self.begin_stop()
        if future is not None:
            try:
                future.result(timeout)
            except BaseException:  # noqa: BLE001 - timed out or the loop is gone: the sweep below still runs
                future.cancel()
        return self.end_stop()

    def begin_stop(self):
        """Ask the loop to shut the server down; a concurrent future, or None when the loop is gone."""
        if not self.runner.alive:
            return None
        try:
            return self.runner.submit(self._shutdown())
        except RuntimeError:  # the loop closed in between
            return None

    def end_stop(self) -> list[str]:
        """After the SDK's shutdown: stop whatever the server left running, close its log. Returns notices for
        what could not be stopped (each naming the server)."""
        report, self._report = self._report, None
        notes = procs.finish(self._token, report)
        self._close_log()
        return [f"MCP server {self.name!r}: {note}" for note in notes]

    def call(self, tool: str, arguments: dict[str, Any]):
        """CallToolResult; raises TimeoutError after the server's timeout, or another exception (see errors)."""
        return self.runner.run(self._call(tool, arguments), self.config.timeout_s + 5.0)

    # -- on the loop --------------------------------------------------------------------------------------------
    async def _start(self) -> None:
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.ensure_future(self._serve(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.config.startup_timeout_s)
        except asyncio.TimeoutError:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._fail(f"did not start within {self.config.startup_timeout_s:g}s")

    async def _serve(self, ready: asyncio.Future) -> None:
        if self._stopping.is_set():  # stopped before it began
            ready.set_result(None)
            return
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(await self._client_for(stack))
                self.tools = await self._list_tools(client)
                self._client = client
                self._set(RUNNING, None)
                ready.set_result(None)
                await self._watch()
            self._client = None
            if self.state == RUNNING:
                self._set(STOPPED, None)
        except asyncio.CancelledError:
            self._client = None
            if self.state in (RUNNING, STARTING) and self._stopping.is_set():
                self._set(STOPPED, None)
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure of a server is a state, never a crash
            self._client = None
            stopping = self._stopping.is_set()
            if not stopping:
                self._fail(("stopped: " if ready.done() else "") + self._explain(exc))
            elif self.state != FAILED:
                self._set(STOPPED, None)
        finally:
            if not ready.done():
                ready.set_result(None)

    async def _watch(self) -> None:
        """Until stopped. The SDK notices a stdio server that exits only at the next request; looking for its
        processes (Linux) every few seconds makes that a notice now, and takes its tools off the list."""
        while not self._stopping.is_set():
            try:
                await asyncio.wait_for(self._stopping.wait(), WATCH_S)
            except asyncio.TimeoutError:
                if self.config.command is not None and PROC.is_dir() and not await asyncio.to_thread(self._alive):
                    raise ServerExited("the server process exited")

    def _alive(self) -> bool:
        return bool(marked(self._token))

    async def _client_for(self, stack: contextlib.AsyncExitStack):
        from mcp import Client, StdioServerParameters

        cfg = self.config
        if cfg.command is not None:
            from mcp.client.stdio import stdio_client

            # Looked up in PATH without empty or relative entries, as run_shell does; the server gets that PATH too.
            env = {**cfg.env, MARKER: self._token}
            env["PATH"] = safe_path(cfg.env.get("PATH") or os.environ.get("PATH") or os.defpath)
            program = procs.program_path(cfg.command, env)
            run = procs.launch(program, tuple(cfg.args))  # under run_shell's process wrapper on Linux
            if self._report is not None:  # a restart: the last run's report is no longer needed
                procs.finish(self._token, self._report)
            self._report = run.report
            params = StdioServerParameters(command=run.command, args=list(run.args), cwd=cfg.cwd, env=env)
            return Client(stdio_client(params, errlog=self._open_log()))
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async def note_status(response) -> None:
            if response.status_code >= 400:
                self._http_status = response.status_code

        self._http_status = None
        http = await stack.enter_async_context(httpx2.AsyncClient(
            headers=dict(cfg.headers), timeout=httpx2.Timeout(30.0, read=max(300.0, cfg.timeout_s)),
            event_hooks={"response": [note_status]}))
        assert cfg.url is not None  # a server has a command or a url (config._server)
        return Client(streamable_http_client(cfg.url, http_client=http))

    async def _list_tools(self, client) -> list[ServerTool]:
        tools: list[ServerTool] = []
        cursor = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                ann = tool.annotations
                tools.append(ServerTool(
                    name=tool.name, description=tool.description or tool.title or "",
                    input_schema=tool.input_schema if isinstance(tool.input_schema, dict) else {},
                    read_only=bool(ann is not None and ann.read_only_hint is True),
                    destructive=not (ann is not None and ann.destructive_hint is False)))
            cursor = page.next_cursor
            if not cursor or len(tools) >= MAX_TOOLS:
                break
        return tools[:MAX_TOOLS]

    async def _call(self, tool: str, arguments: dict[str, Any]):
        client = self._client
        if client is None or self.state != RUNNING:
            raise ConnectionError(f"server {self.name!r} is not running")
        try:
            return await asyncio.wait_for(client.call_tool(tool, arguments), self.config.timeout_s)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer within {self.config.timeout_s:g}s") from None

    async def _shutdown(self) -> None:
        if self._stop is not None:
            self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 8.0)
            except (asyncio.TimeoutError, Exception):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self.state in (RUNNING, STARTING):
            self._set(STOPPED, None)

    def _explain(self, exc: BaseException) -> str:
        status = self._http_status
        if status is not None:
            hint = " (check the headers in mcp.json, e.g. a token)" if status in (401, 403) else ""
            return f"HTTP {status} from {self.config.url}{hint}"
        return describe(exc, self.stderr_tail())

    # -- state ------------------------------------------------------------------------------------------------------
    def mark_dead(self, reason: str) -> None:
        """A call found the connection gone: the server is failed for the rest of the session."""
        if self.state == RUNNING:
            self._fail("stopped: " + reason)

    def switch_off(self) -> list[str]:
        notes = self.stop()
        self._set(OFF, None)
        return notes

    def _fail(self, message: str) -> None:
        self.tools = []
        self._set(FAILED, message)

    def _set(self, state: str, error: str | None) -> None:
        changed = (state, error) != (self.state, self.error)
        self.state, self.error = state, error
        if changed:
            log.info("server %s: %s%s%s", self.name, state, f" ({len(self.tools)} tools)" if state == RUNNING else "",
                     f": {error}" if error else "")
        listener = self.on_state
        if changed and listener is not None:
            try:
                listener(self)
            except Exception:  # a UI callback must not break the connection
                pass

    # -- the server's stderr ----------------------------------------------------------------------------------------
    def _open_log(self) -> TextIO:
        """The server's stderr goes to a log file (it must not scribble over the app's screen); its last line
        explains a failure."""
        self._close_log()
        log: TextIO | None = None
        if self._log_dir is not None:
            try:  # private (0600 in a 0700 folder, never through a link): servers log what they were sent
                self.log_path = self._log_dir / f"{self.name}.log"
                log = open_append(self.log_path, within=self._log_root, readable=True)
            except OSError:
                log, self.log_path = None, None
        if log is None:
            log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        log.seek(0, os.SEEK_END)
        self._log, self._log_start = log, log.tell()
        return log

    def stderr_tail(self) -> str:
        log = self._log
        if log is None:
            return ""
        try:
            log.flush()
            log.seek(self._log_start)
            text = log.read(1 << 20)
            log.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return lines[-1] if lines else ""

    def _close_log(self) -> None:
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None
