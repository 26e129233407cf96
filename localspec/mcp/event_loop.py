"""An event loop on its own thread, for the MCP SDK (async) under the agent loop (sync): anyio runs it, with a
blocking portal that starts the loop and stops it.

Why a thread: the agent, the CLI and the app's workers call tools synchronously, while an MCP connection is a
set of long-lived async tasks (the transport's reader and writer) that must keep running between calls. Stopping
the portal ends the loop, and anyio's run cancels whatever still runs there. Two choices made on purpose:
- The thread is a daemon of our own, not anyio's start_blocking_portal's executor thread, which the interpreter
  waits for at exit: a session nobody closed would hang the exit (the manager's exit handler stops the servers).
- Coroutines are handed to the loop without waiting for it (asyncio's run_coroutine_threadsafe), not through the
  portal's start_task_soon, which waits for the loop to take the task: callers start servers while holding a lock
  that the loop's own state callbacks take, and waiting there would deadlock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine

import anyio
from anyio.from_thread import BlockingPortal


class LoopThread:
    def __init__(self, name: str = "localspec-mcp") -> None:
        self._portal: BlockingPortal | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._portal is None:
            raise RuntimeError("the MCP event loop did not start")

    def _run(self) -> None:
        async def serve() -> None:
            async with BlockingPortal() as portal:
                self._portal, self._loop = portal, asyncio.get_running_loop()
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
        """Start `coro` on the loop without waiting for it; its future (cancelling the future cancels the
        coroutine). RuntimeError once the loop has stopped."""
        loop = self._loop
        if loop is None or loop.is_closed() or not self._thread.is_alive():
            coro.close()  # never started: no "coroutine was never awaited" warning
            raise RuntimeError("the MCP event loop is not running")
        return asyncio.run_coroutine_threadsafe(coro, loop)

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
        portal, loop = self._portal, self._loop
        if portal is not None and loop is not None and self._thread.is_alive():
            try:  # asked without waiting for the loop (see above); the join below waits, at most `timeout`
                asyncio.run_coroutine_threadsafe(portal.stop(cancel_remaining=True), loop)
            except RuntimeError:  # the loop closed in between
                pass
        self._thread.join(timeout)
