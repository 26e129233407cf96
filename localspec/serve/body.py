"""Read a request body as JSON, within bounds: a size cap, strict JSON (no NaN or Infinity) and a nesting limit,
so that no body makes the server run out of memory or stack (a RecursionError would be a 500)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from localspec.serve.api_errors import APIError, bad_request

MAX_BODY_BYTES = 32 << 20  # a full 128k-token conversation is ~1 MB of JSON
MAX_BODY_SECONDS = 60.0  # 32 MiB at about 0.5 MiB/s; loopback clients send a body in milliseconds
MAX_DEPTH = 64  # objects and arrays inside each other; JSON Schemas in requests rarely pass 20


def too_large() -> APIError:
    return APIError(413, f"The request body is larger than {MAX_BODY_BYTES >> 20} MiB.", code="request_too_large")


async def read_body(request) -> bytes:
    """The whole body, within MAX_BODY_BYTES (declared or chunked) and MAX_BODY_SECONDS: a client that trickles
    a byte at a time (slowloris) would otherwise hold its connection and handler open for ever."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large()
    try:
        return await asyncio.wait_for(_read(request), MAX_BODY_SECONDS)
    except asyncio.TimeoutError:
        raise APIError(408, f"The request body did not arrive within {MAX_BODY_SECONDS:g} seconds.",
                       code="request_timeout") from None


async def _read(request) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def nesting_depth(valid_json: bytes) -> int:
    """Deepest bracket nesting of a valid JSON text (brackets inside strings do not count), without recursion
    and at C speed: a hostile body may be 32 MiB of brackets."""
    import numpy as np

    b = np.frombuffer(_STRING.sub(b'""', valid_json), dtype=np.uint8)
    step = ((b == 0x5B) | (b == 0x7B)).astype(np.int8) - ((b == 0x5D) | (b == 0x7D)).astype(np.int8)
    return int(np.cumsum(step, dtype=np.int64).max(initial=0))


def parse_json(raw: bytes) -> Any:
    """The decoded body, or a 400. Blocking (up to a second or two for a 32 MiB body): call it off the event loop."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        value = None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise bad_request(f"We could not parse the JSON body of your request ({exc}). The body must be valid "
                          "JSON.") from None
    if value is None and raw.strip() != b"null" or nesting_depth(raw) > MAX_DEPTH:
        raise bad_request(f"The JSON body nests objects and arrays more than {MAX_DEPTH} deep.")
    return value
