"""Run the app with uvicorn: in the foreground (the CLI) or in a background thread (tests, embedding)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn


@dataclass
class RunningServer:
    server: uvicorn.Server
    thread: threading.Thread
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)


def _config(app, host: str, port: int, log_level: str):
    import uvicorn

    # timeout_graceful_shutdown: open streams must not keep Ctrl-C waiting forever.
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=3,
                          access_log=False)


def serve_forever(app, host: str, port: int, log_level: str = "info") -> None:
    import uvicorn

    uvicorn.Server(_config(app, host, port, log_level)).run()


def start_in_thread(app, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning",
                    timeout: float = 30.0) -> RunningServer:
    """Start uvicorn in a daemon thread (port 0: an ephemeral port) and wait until it accepts connections."""
    import uvicorn

    server = uvicorn.Server(_config(app, host, port, log_level))
    thread = threading.Thread(target=server.run, name="localspec-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the HTTP server did not start on {host}:{port}")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return RunningServer(server, thread, host, bound)
