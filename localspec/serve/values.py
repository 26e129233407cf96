"""Values inside a request that are encoded or decoded later, checked as strictly as the body itself.

Why: the body is bounded when it is read (body.py: size, strict JSON, 64 levels), but some of its values are
taken apart again later, where a failure would be a 500: a lone UTF-16 surrogate (`"\\ud800"` is valid JSON
escaping, but not a character) fails when the prompt is encoded for the tokenizer; a tool call's `arguments` is
a JSON text of its own, decoded when the prompt is rendered, and can hold JSON nested 100,000 deep
(RecursionError) or a 5,000-digit number (ValueError) although the body around it is 6 deep. Both are found
here first and answered with a 400 naming the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from localspec.serve.body import MAX_DEPTH, nesting_depth

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any) -> tuple[str, str] | None:
    """(param, the character escaped) of the first string, key or value, holding a lone surrogate; else None.

    Iterative, and the path is built only for the string found: a 32 MiB array of a million items costs one pass.
    """
    todo: list[tuple[Any, tuple]] = [(value, ())]
    while todo:
        node, path = todo.pop()
        if isinstance(node, str):
            found = None if node.isascii() else _SURROGATE.search(node)
            if found:
                return _param(path), f"\\u{ord(found.group()):04x}"
        elif isinstance(node, dict):
            for key, item in node.items():
                if not key.isascii() and (hit := _SURROGATE.search(key)):
                    return _param(path) or "(a key)", f"\\u{ord(hit.group()):04x}"
                todo.append((item, (path, key)))
        elif isinstance(node, list):
            todo.extend((item, (path, i)) for i, item in enumerate(node))
    return None


def _param(path: tuple) -> str:
    parts = []
    while path:
        path, key = path
        parts.append(key)
    out = ""
    for part in reversed(parts):
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def json_text_problem(text: str) -> str | None:
    """Why a JSON text inside the body (a tool call's arguments) would fail when decoded later, or None.

    Text that is not JSON at all is not a problem here: it reaches the template as text, as before."""
    if "[" in text or "{" in text:
        try:
            depth = nesting_depth(text.encode("utf-8", "surrogatepass"))
        except ValueError:  # not valid JSON bracket structure for the fast count: the decoder decides below
            depth = 0
        if depth > MAX_DEPTH:
            return f"holds JSON nested more than {MAX_DEPTH} deep"
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return f"holds JSON nested more than {MAX_DEPTH} deep"
    except json.JSONDecodeError:
        return None
    except ValueError as exc:  # a number of thousands of digits (int's conversion limit), NaN, Infinity
        if "digits" in str(exc):
            return "holds a number with more digits than can be decoded"
        return f"holds a value that is not strict JSON ({str(exc).splitlines()[0][:120]})"
    found = lone_surrogate(value)
    if found:
        return f"holds a lone UTF-16 surrogate ({found[1]}), which is not a character"
    return None
