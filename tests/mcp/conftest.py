"""Fixtures for the MCP tests: the test server (tests/mcp/server.py) as a real process, over stdio or HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.serve_helpers import free_port

SERVER = Path(__file__).with_name("server.py")


def stdio_server(notes: Path, *flags: str, **extra) -> dict:
    """One mcpServers entry that runs the test server over stdio."""
    return {"command": sys.executable, "args": [str(SERVER), "--dir", str(notes), *flags], **extra}


def write_mcp_config(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


class Recorder:
    """An approver that records what it was asked and gives one answer."""

    def __init__(self, answer):
        self.answer, self.requests = answer, []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


@pytest.fixture
def notes(tmp_path) -> Path:
    d = tmp_path / "notes"
    d.mkdir()
    (d / "todo.txt").write_text("buy milk\n", encoding="utf-8")
    return d


@pytest.fixture
def http_server(notes):
    """The test server over streamable HTTP, requiring `Authorization: Bearer s3cret`; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "--dir", str(notes), "--transport", "http",
                             "--port", str(port), "--token", "s3cret", "--name", "web"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP test server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
