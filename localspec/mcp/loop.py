"""An event loop on its own thread, for the MCP SDK (async) under the agent loop (sync): anyio's blocking portal.

Why a thread: the agent, the CLI and the app's workers call tools synchronously, while an MCP connection is a
set of long-lived async tasks (the transport's reader and writer) that must keep running between calls. The portal
runs coroutines on that loop from any other thread and hands back their results; stopping it cancels what still
runs there. Why not anyio's start_blocking_portal: its thread is an executor's, which the interpreter waits for at
exit, so a session nobody closed would hang the exit; this thread is a daemon, and the manager's exit handler stops
the servers.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Awaitable, Coroutine

import anyio
from anyio.from_thread import BlockingPortal


async def _wait(coro: Awaitable[Any]) -> Any:
    return await coro


class LoopThread:
    def __init__(self, name: str = "localspec-mcp") -> None:
        self._portal: BlockingPortal | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._portal is None:
            raise RuntimeError("the MCP event loop did not start")

    def _run(self) -> None:
        async def serve() -> None:
            async with BlockingPortal() as portal:
                self._portal = portal
                self._ready.set()
                await portal.sleep_until_stopped()

        try:
            anyio.run(serve, backend="asyncio")  # the SDK's streams and the connections' tasks are asyncio's
        finally:
            self._ready.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, coro: Coroutine) -> concurrent.futures.Future:
        """Start `coro` on the loop; its future (cancelling the future cancels the coroutine). RuntimeError once the
        loop has stopped."""
        if self._portal is None:
            raise RuntimeError("the MCP event loop is not running")
        try:
            return self._portal.start_task_soon(_wait, coro)
        except BaseException:
            coro.close()  # never started: no "coroutine was never awaited" warning
            raise

    def run(self, coro: Coroutine, timeout: float | None = None) -> Any:
        """Run `coro` on the loop and wait for it; on timeout it is cancelled and TimeoutError raised."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            if future.done():  # the coroutine's own TimeoutError (the same class since Python 3.11)
                raise
            future.cancel()
            raise TimeoutError(f"no result within {timeout:g}s") from None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (cancelling what still runs on it) and join the thread."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.stop() called from its own thread")
        portal = self._portal
        if portal is not None and self._thread.is_alive():
            try:
                portal.call(portal.stop, True)
            except RuntimeError:  # stopped in between
                pass
        self._thread.join(timeout)
