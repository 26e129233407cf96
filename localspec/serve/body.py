"""Read a request body as JSON, within bounds: a size cap, strict JSON (no NaN or Infinity) and a nesting limit,
so that no body makes the server run out of memory or stack (a RecursionError would be a 500)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from localspec.serve.api_errors import APIError, bad_request

MAX_BODY_BYTES = 32 << 20  # a full 128k-token conversation is ~1 MB of JSON
MAX_BODY_SECONDS = 60.0  # 32 MiB at about 0.5 MiB/s; loopback clients send a body in milliseconds
MAX_DEPTH = 64  # objects and arrays inside each other; JSON Schemas in requests rarely pass 20
# Values in arrays and objects together, counted as commas and opening brackets anywhere (prose in messages too). A
# 128k-token conversation (about 500 KB of text) has some 10,000 commas; 2,000 messages with tool calls hold about
# 20,000 values, a tool with a 10,000-entry enum as many: this leaves room for all of them several times over, and
# bounds what json, pydantic, the surrogate walk and the template build.
MAX_VALUES = 250_000


def too_large() -> APIError:
    return APIError(413, f"The request body is larger than {MAX_BODY_BYTES >> 20} MiB.", code="request_too_large")


async def read_body(request) -> bytearray:
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


async def _read(request) -> bytearray:
    # One growing buffer, not a list of chunks joined at the end: the join held the body twice (three hostile
    # 32 MiB bodies at once took the server 325 MiB up, over its bound of ten bodies' worth).
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > MAX_BODY_BYTES:
            raise too_large()
        body += chunk
    return body


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


SCAN_CHUNK = 1 << 18  # bytes scanned at a time: the scan's temporaries (int32/int64 per byte) stay a few MiB


@dataclass(frozen=True)
class Shape:
    """What building a JSON text's Python objects would cost, read from its bytes: how deep its brackets nest
    (outside strings) and how many values could be decoded from it (an upper bound: each comma and opening bracket,
    inside strings too, so JSON texts held in strings, such as a tool call's `arguments`, are counted as well)."""
    depth: int
    values: int


def json_shape(text: bytes | bytearray) -> Shape:
    """The Shape of a JSON text, without recursion, at C speed and in bounded memory: a hostile body may be 32 MiB
    of brackets, or 8 million short strings (a regex that cut the strings out first built 8 million pieces: 1.4 GB).
    It is read in chunks, carrying from one to the next whether a string is open and how many backslashes end it."""
    import numpy as np

    depth = top = values = 0
    odd_quotes, backslashes = 0, 0  # unescaped quotes so far (mod 2); backslashes ending the previous chunk
    for start in range(0, len(text), SCAN_CHUNK):
        b = np.frombuffer(text, dtype=np.uint8, count=min(SCAN_CHUNK, len(text) - start), offset=start)
        n = len(b)
        opens = (b == 0x5B) | (b == 0x7B)
        values += int(np.count_nonzero(opens | (b == 0x2C)))
        slash = b == 0x5C
        idx = np.arange(n, dtype=np.int32)
        last_other = np.maximum.accumulate(np.where(slash, -1, idx))  # the last non-backslash at or before i
        run = np.empty(n, dtype=np.int64)  # backslashes right before position i
        run[0] = backslashes
        prev = last_other[:-1]
        run[1:] = np.where(prev >= 0, idx[:-1] - prev, idx[1:] + backslashes)
        quote = (b == 0x22) & (run % 2 == 0)
        before = np.cumsum(quote, dtype=np.int32) - quote + odd_quotes  # unescaped quotes before position i
        outside = (before % 2 == 0) & ~quote
        step = (opens & outside).astype(np.int32) - (((b == 0x5D) | (b == 0x7D)) & outside).astype(np.int32)
        levels = np.cumsum(step, dtype=np.int32)
        top = max(top, depth + int(levels.max()))
        depth += int(levels[-1])
        odd_quotes = (odd_quotes + int(np.count_nonzero(quote))) % 2
        backslashes = backslashes + n if last_other[-1] < 0 else n - 1 - int(last_other[-1])
    return Shape(top, values)


def nesting_depth(valid_json: bytes) -> int:
    """Deepest bracket nesting of a JSON text (see json_shape)."""
    return json_shape(valid_json).depth


def parse_json(raw: bytes | bytearray) -> Any:
    """The decoded body, or a 400. Its shape is bounded first, from the bytes (depth, and how many values its
    arrays and objects hold), so no body builds more Python objects than a real request needs: a 32 MiB body of
    `[],[],...` built 11 million lists and took the server from 254 MB to 2.9 GB for 35 s. Blocking (up to a second
    for a 32 MiB body): call it off the event loop."""
    shape = json_shape(raw)
    if shape.depth > MAX_DEPTH:
        raise bad_request(f"The JSON body nests objects and arrays more than {MAX_DEPTH} deep.")
    if shape.values > MAX_VALUES:
        raise APIError(413, f"The JSON body holds more than {MAX_VALUES:,} values in its arrays and objects, "
                            f"JSON text in its strings included (up to {shape.values:,}).", code="request_too_large")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:  # the count above reads valid JSON exactly; this is for text it misreads
        raise bad_request(f"The JSON body nests objects and arrays more than {MAX_DEPTH} deep.") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise bad_request(f"We could not parse the JSON body of your request ({exc}). The body must be valid "
                          "JSON.") from None
    return value
