"""The server's work queue: closing it answers every request still waiting (a handler waits for an event from the
worker; a job that will never run must still send one), on the queue alone and through the chat service."""

from __future__ import annotations

import threading

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.serve.api_errors import APIError
from localspec.serve.generate import ErrorEvent
from localspec.serve.queue import WorkQueue
from localspec.serve.schemas import parse_chat_request
from localspec.serve.service import ChatService
from localspec.speculative.builder import build_engine


def _blocker(started: threading.Event, release: threading.Event):
    def fn(job):
        started.set()
        release.wait(10)
    return fn


def test_close_drops_the_waiting_jobs_and_tells_each_one():
    queue = WorkQueue()
    started, release, ran, told = threading.Event(), threading.Event(), [], []
    queue.submit(_blocker(started, release), "a")
    assert started.wait(10)
    waiting = [queue.submit(lambda job, n=n: ran.append(n), client, on_drop=lambda n=n: told.append(n))
               for n, client in enumerate(("a", "b", "c"))]
    assert queue.waiting == 3
    assert queue.close(timeout=0.1) is False  # the running job still holds the worker
    assert sorted(told) == [0, 1, 2] and queue.waiting == 0
    assert all(job.done.is_set() and job.cancel.is_set() for job in waiting)
    release.set()
    queue._thread.join(10)
    assert not queue._thread.is_alive() and ran == []  # dropped jobs never run


def test_a_request_waiting_when_the_server_stops_gets_a_503(tiny_target):
    pair = load_pair(str(tiny_target), None, ctx=ContextSettings(n_ctx=512, n_threads=1))
    service = ChatService(pair, build_engine(pair), model_id="tiny")
    started, release, events = threading.Event(), threading.Event(), []
    service.queue.submit(_blocker(started, release))
    assert started.wait(10)
    plan = service.plan(parse_chat_request({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}))
    job = service.start(plan, events.append)
    assert service.queue.close(timeout=0.1) is False
    (event,) = events
    assert isinstance(event, ErrorEvent) and isinstance(event.error, APIError) and event.error.status == 503
    assert "shutting down" in event.error.body()["error"]["message"] and job.done.is_set()
    release.set()
    service.queue._thread.join(10)
    pair.close()


def test_a_service_generates_on_the_compute_thread_that_loaded_its_pair(tiny_target):
    from localspec.runtime.compute_thread import ComputeThread

    compute = ComputeThread("localspec-engine")
    pair = compute.call(load_pair, str(tiny_target), None, ctx=ContextSettings(n_ctx=512, n_threads=1))
    service = ChatService(pair, build_engine(pair), model_id="tiny", compute=compute)
    seen: list[str] = []
    plan = service.plan(parse_chat_request({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}))
    job = service.start(plan, lambda event: seen.append(threading.current_thread().name))
    assert job.done.wait(60)
    service.close()
    assert seen and set(seen) == {"localspec-engine"}  # not the queue's own worker thread
