"""One thread for all of a front end's llama.cpp work: loading, warming up, generating.

Why: llama.cpp's CPU backend (built with OpenMP, as llama-cpp-python builds it) keeps a team of OpenMP threads
for every thread that ever computed on it. Once the teams' threads outnumber the cores, libgomp makes the working
team's threads sleep between steps instead of spinning, and every step then waits for them to wake. `localspec
serve` loaded its pair on the main thread and generated on its worker: 57 tok/s, against 99 tok/s with both on one
thread (SmolLM2-135M F16, 2 threads, 2 cores, target only). Thread pools do the same by accident (Textual's workers
run on whichever thread of asyncio's executor is free), so the front ends that work off the main thread hand that
work to one of these.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Callable, TypeVar

T = TypeVar("T")


class ComputeThread:
    """Runs callables one at a time on one long-lived thread, started at the first call."""

    def __init__(self, name: str = "localspec-compute") -> None:
        self.name = name
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def call(self, fn: Callable[..., T], *args, **kwargs) -> T:
        """fn(*args, **kwargs) on the compute thread; returns its result or raises its exception here."""
        if threading.current_thread() is self._thread:  # already there (a call made from inside a call)
            return fn(*args, **kwargs)
        future: Future = Future()
        with self._start_lock:
            if self._thread is None:
                # A daemon: a native call that never returns must not keep the program from exiting.
                self._thread = threading.Thread(target=self._run, args=(self._jobs,), name=self.name, daemon=True)
                self._thread.start()
            self._jobs.put((future, fn, args, kwargs))
        return future.result()

    def close(self) -> None:
        """Let the thread end after the work already handed over; later calls start a new one."""
        with self._start_lock:
            if self._thread is not None:
                self._jobs.put(None)
                self._jobs, self._thread = queue.SimpleQueue(), None

    @staticmethod
    def _run(jobs: queue.SimpleQueue) -> None:
        while (item := jobs.get()) is not None:
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the caller, who decides
                future.set_exception(exc)
