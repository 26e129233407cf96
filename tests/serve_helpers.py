"""Shared helpers for the serve and remote tests: `localspec serve` on 127.0.0.1 (ephemeral port, in a thread)
over real tiny GGUF models, and the official OpenAI client pointed at it. No tests live here; its fixture reaches
every test through tests/conftest.py (pytest_plugins)."""

from __future__ import annotations

import contextlib
import socket

import openai  # the test extra's: the official client is what the server is tested against
import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.serve.http_app import create_app
from localspec.serve.server import start_in_thread
from localspec.serve.service import ChatService
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import DraftingConfig

API_KEY = "test-key-123"


@contextlib.contextmanager
def running_server(target, draft=None, *, model_id="tiny", n_ctx=512, api_key=None, max_waiting=16, fmt=None,
                   draft_max=4):
    """Load the pair, serve it on an ephemeral loopback port; yields (base_url, service)."""
    pair = load_pair(str(target), str(draft) if draft else None, ctx=ContextSettings(n_ctx=n_ctx, n_threads=1))
    engine = build_engine(pair, DraftingConfig(draft_max=draft_max, draft_p_min=0.0))
    service = ChatService(pair, engine, model_id=model_id, defaults=GenParams(max_tokens=16), fmt=fmt,
                          max_waiting=max_waiting)
    server = start_in_thread(create_app(service, api_key))
    try:
        yield server.url, service
    finally:
        server.stop()
        service.close()


@contextlib.contextmanager
def serve_process(target, home, *extra: str, timeout: float = 120):
    """`localspec serve` in a process of its own (its home `home`, an ephemeral port), as a user starts it; yields
    (base_url, pid) once it answers /health."""
    import os
    import subprocess
    import sys

    port = free_port()
    env = dict(os.environ, LOCALSPEC_HOME=str(home), HF_HUB_OFFLINE="1")
    env.pop("LOCALSPEC_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "localspec", "serve", "--target", str(target), "--port", str(port),
                             "--ctx-size", "1024", "--threads", "1", *extra], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, proc, timeout)
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


def wait_until_healthy(url: str, proc, timeout: float = 60, why=lambda: "serve did not start") -> None:
    """Wait for a server process to answer /health; fail (with `why()`) if it exits or takes over `timeout`."""
    import time

    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, why()
        time.sleep(0.2)


def client(url: str, api_key: str = "unused", **kw):
    # max_retries=0: a 503 must surface in the tests, not be retried away by the client.
    return openai.OpenAI(base_url=url + "/v1", api_key=api_key, max_retries=0, timeout=180, **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def tiny_server(tiny_pair_paths):
    with running_server(*tiny_pair_paths) as (url, service):
        yield url, service


# Tools whose arguments are finite under the grammar (enums, booleans), so even a model that never stops on its
# own completes a call.
TOOLS = [
    {"type": "function", "function": {
        "name": "set_light", "description": "Switch a light",
        "parameters": {"type": "object", "properties": {
            "room": {"type": "string", "enum": ["kitchen", "hall"]}, "on": {"type": "boolean"}},
            "required": ["room", "on"]}}},
    {"type": "function", "function": {
        "name": "pick_color", "description": "Pick a colour",
        "parameters": {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
                       "required": ["color"]}}},
]
