"""An asyncio event loop on its own thread, for the MCP SDK (async) under the agent loop (sync).

Why a thread: the agent, the CLI and the app's workers call tools synchronously, while an MCP connection is a
set of long-lived async tasks (the transport's reader and writer) that must keep running between calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine


class LoopThread:
    def __init__(self, name: str = "localspec-mcp") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                self._cancel_leftovers()
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    def _cancel_leftovers(self) -> None:
        tasks = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def submit(self, coro: Coroutine) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

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
        if self.loop.is_closed():
            return
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.stop() called from its own thread")
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # closed in between
            return
        self._thread.join(timeout)
