"""Who may talk to a server without an API key: programs on this machine, not web pages.

A key-less server listens on loopback only, but a browser on the same machine reaches loopback too. A page can
post to it blind (any Origin), and with DNS rebinding (attacker.example resolving to 127.0.0.1) read the answers.
So, as Jupyter does, a key-less server answers only requests whose Host header names a loopback address and which
carry no Origin header, or a loopback one. Programs (curl, the OpenAI client) send no Origin; browsers always send
one on cross-origin requests. With an API key a page cannot use the server anyway, so nothing here applies.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit


def is_loopback_host(host: str) -> bool:
    """`localhost`, `127.x.y.z` or `[::1]`, with or without a port (the Host header's forms)."""
    host = host.strip().lower()
    if host.startswith("["):  # [v6] or [v6]:port
        end = host.find("]")
        if end < 0 or (host[end + 1:] and not _is_port(host[end + 1:])):
            return False
        name = host[1:end]
    else:
        name, sep, port = host.partition(":")
        if sep and not _is_port(":" + port):
            return False
    if name in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_port(text: str) -> bool:
    return text.startswith(":") and text[1:].isascii() and text[1:].isdigit() and len(text) <= 6


def is_loopback_origin(origin: str) -> bool:
    """An Origin header (`scheme://host[:port]`) naming this machine; `null` (sandboxed pages, files) is not."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
        return False
    return is_loopback_host(parts.netloc)


def refusal(scope) -> tuple[str, str] | None:
    """(code, message) when the request must be refused, else None."""
    headers: dict[str, list[str]] = {}
    for key, value in scope.get("headers", []):
        headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    hosts = headers.get("host", [])
    if len(hosts) > 1 or (hosts and not is_loopback_host(hosts[0])):
        return "forbidden_host", ("This server has no API key, so it answers only requests addressed to localhost, "
                                  "127.0.0.1 or [::1] (the Host header), not other names that may resolve here.")
    origins = headers.get("origin", [])
    if len(origins) > 1 or (origins and not is_loopback_origin(origins[0])):
        return "forbidden_origin", ("This server has no API key, so it does not answer requests from web pages of "
                                    "other sites (the Origin header). Start it with --api-key to allow them.")
    return None


class LoopbackOnly:
    """ASGI middleware for key-less servers: 403 with an OpenAI error body for a foreign Host or Origin."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            refused = refusal(scope)
            if refused is not None:
                code, message = refused
                body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                             "code": code}}).encode()
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
