"""One worker thread runs generations one at a time (the engine is not thread-safe); waiting jobs are bounded.

Fairness: each client (API key or address) has its own FIFO and the worker takes clients in turn, so one
client sending many requests cannot starve the others. Over capacity, submit() raises QueueFull and the
server answers 503 with a Retry-After estimated from recent job durations.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict, deque
from typing import Callable

log = logging.getLogger("localspec.serve")


class QueueFull(Exception):
    def __init__(self, retry_after: int):
        super().__init__(f"queue full, retry after {retry_after} s")
        self.retry_after = retry_after


class Job:
    def __init__(self, fn: Callable[["Job"], None], client: str, on_drop: Callable[[], None] | None = None):
        self.fn = fn
        self.client = client
        self.on_drop = on_drop  # told when the job will never run (the queue closed): its waiter must hear of it
        self.cancel = threading.Event()  # set when the client went away: skip, or stop generating
        self.done = threading.Event()


class WorkQueue:
    def __init__(self, max_waiting: int = 16):
        self.max_waiting = max_waiting
        self._clients: "OrderedDict[str, deque[Job]]" = OrderedDict()  # rotation order = dict order
        self._cond = threading.Condition()
        self._waiting = 0
        self._running = 0
        self._avg_s = 2.0  # moving average of job durations, for Retry-After
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="localspec-engine", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def running(self) -> int:
        return self._running

    def submit(self, fn: Callable[[Job], None], client: str = "", on_drop: Callable[[], None] | None = None) -> Job:
        with self._cond:
            if self._closed:
                raise QueueFull(self._retry_after())
            if self._waiting >= self.max_waiting:
                raise QueueFull(self._retry_after())
            job = Job(fn, client, on_drop)
            self._clients.setdefault(client, deque()).append(job)
            self._waiting += 1
            self._cond.notify()
            return job

    def close(self, timeout: float = 5.0) -> bool:
        """Drop waiting jobs (each is cancelled, done, and its on_drop told, so no handler waits for an answer that
        never comes) and stop the worker; False if a generation is still running after `timeout`."""
        with self._cond:
            self._closed = True
            dropped = [job for jobs in self._clients.values() for job in jobs]
            self._clients.clear()
            self._waiting = 0
            self._cond.notify_all()
        for job in dropped:
            job.cancel.set()
            job.done.set()
            if job.on_drop is not None:
                try:
                    job.on_drop()
                except Exception:  # one waiter's trouble must not keep the others waiting
                    log.exception("telling a dropped request failed")
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _retry_after(self) -> int:
        return max(1, min(60, math.ceil(self._avg_s)))  # a place frees when the running job ends

    def _next(self) -> Job | None:
        with self._cond:
            while not self._clients and not self._closed:
                self._cond.wait()
            if not self._clients:
                return None
            client, jobs = next(iter(self._clients.items()))
            job = jobs.popleft()
            del self._clients[client]
            if jobs:  # this client goes to the back of the rotation
                self._clients[client] = jobs
            self._waiting -= 1
            self._running += 1
            return job

    def _work(self) -> None:
        while (job := self._next()) is not None:
            t0 = time.perf_counter()
            try:
                if not job.cancel.is_set():
                    job.fn(job)
            except BaseException:  # a failing job must never take the worker (and the server) down
                log.exception("generation failed")
            finally:
                job.done.set()
                with self._cond:
                    self._running -= 1
                self._avg_s = 0.8 * self._avg_s + 0.2 * (time.perf_counter() - t0)
