"""Server-sent events from a byte-line iterator: yields each event's data string (multi-line data joined)."""

from __future__ import annotations

from typing import Iterable, Iterator


def sse_data(lines: Iterable[bytes]) -> Iterator[str]:
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):  # comment / keep-alive ping
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
