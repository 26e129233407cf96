"""One line for what went wrong with an MCP server (the SDK raises exception groups, OS, HTTP and protocol errors;
the user needs a sentence, never a traceback)."""

from __future__ import annotations

from localspec.tools.tool_result import one_line

_MAX = 300


def lost_connection() -> tuple[type[BaseException], ...]:
    """A connection that ended under the SDK: its streams (anyio's exceptions), the socket, or the HTTP transport.
    (Imported when asked: the HTTP client is not loaded by commands that never start a server.)"""
    import anyio
    import httpx2

    return (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError,
            httpx2.NetworkError, httpx2.RemoteProtocolError)


class ServerExited(Exception):
    """A stdio server's processes are gone while the session still uses it."""


def leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups and `raise ... from` chains of wrappers."""
    seen = 0
    while seen < 20:
        seen += 1
        inner = getattr(exc, "exceptions", None)  # (Base)ExceptionGroup, also the backport on Python 3.10
        if isinstance(inner, (tuple, list)) and inner and isinstance(inner[0], BaseException):
            exc = inner[0]
            continue
        break
    return exc


def describe(exc: BaseException, stderr_tail: str = "") -> str:
    exc = leaf(exc)
    text = _text(exc)
    if stderr_tail and stderr_tail not in text:
        text += f" (server said: {_cut(one_line(stderr_tail), 200)})"
    return _cut(one_line(text), _MAX)


def _text(exc: BaseException) -> str:
    import httpx2
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, ServerExited):
        return str(exc)
    if isinstance(exc, MCPError):
        if exc.message.lower() == "connection closed":
            return "the server closed the connection"
        return f"the server answered with an error: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    if isinstance(exc, (TimeoutError, httpx2.TimeoutException)):
        return str(exc) or "timed out"
    name = type(exc).__name__
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is not None:
        return f"HTTP {status} from the server"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect ({exc})" if str(exc) else "cannot connect"
    if isinstance(exc, lost_connection()):
        return "the connection to the server was lost"
    message = str(exc)
    return f"{name}: {message}" if message else name


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
