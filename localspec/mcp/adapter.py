"""MCP tools as the agent's tools: their names (a clash gets `server__tool`), their JSON Schemas (checked so the
call grammar compiles), and their results as bounded text for the model.

Everything here comes from a server and is treated as hostile: names are reduced to the characters tool-call
formats accept, descriptions and schemas are capped in size, results are cut and binary content summarised.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Iterable

from localspec.tools.tool_result import ToolResult, one_line

NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64
MAX_DESCRIPTION = 1024  # small models read every token of every description
MAX_SCHEMA_CHARS = 32 * 1024
RESULT_CHARS = 64 * 1024  # as much as a shell command's output (tools.limits.Limits.shell_output_bytes)


def safe_name(name: str) -> str:
    return NAME_CHARS.sub("_", name)[:MAX_NAME]


def assign_names(listing: Iterable[tuple[str, list[str]]], reserved: Iterable[str]) -> dict[tuple[str, str], str]:
    """{(server, tool): the name the model sees}. A tool keeps its own name unless a built-in or another server's
    tool has it too; then every holder of that name is called `server__tool`."""
    listing = [(server, tools) for server, tools in listing]
    taken = set(reserved)
    counts = Counter(safe_name(t) for _, tools in listing for t in set(tools))
    names: dict[tuple[str, str], str] = {}
    used = set(taken)
    for server, tools in listing:
        for tool in tools:
            if (server, tool) in names:
                continue
            base = safe_name(tool)
            if not base:
                continue
            if base in taken or counts[base] > 1:
                base = f"{safe_name(server)}__{base}"[:MAX_NAME]
            name, n = base, 2
            while name in used:  # `a__b` may exist literally, or two names may sanitise alike
                suffix = f"_{n}"
                name, n = base[: MAX_NAME - len(suffix)] + suffix, n + 1
            used.add(name)
            names[(server, tool)] = name
    return names


def clean_description(text: str) -> str:
    text = one_line(text or "")
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


def clean_schema(schema: Any) -> tuple[dict | None, str | None]:
    """(parameters schema, None) or (None, why it cannot be used). Titles go (noise for a small model); the root
    must be an object schema; llguidance must accept it, or no call to the tool could ever be generated."""
    if not isinstance(schema, dict):
        return None, "its input schema is not an object"
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError, RecursionError):
        return None, "its input schema is not JSON"
    if size > MAX_SCHEMA_CHARS:
        return None, f"its input schema is too large ({size} characters)"
    out = _drop_titles({k: v for k, v in schema.items() if k not in ("$schema", "$id")})
    if out.get("type", "object") != "object":
        return None, "its input schema does not describe an object"
    out["type"] = "object"
    out.setdefault("properties", {})
    err = _grammar_error(out)
    if err:
        return None, f"its input schema cannot be used for constrained calls ({err})"
    return out, None


def _drop_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _drop_titles(sub) for name, sub in value.items()}  # keys are names, not keywords
        elif key in ("enum", "const", "default", "examples"):
            out[key] = value
        else:
            out[key] = _drop_titles(value)
    return out


def _grammar_error(schema: dict) -> str | None:
    from llguidance import LLMatcher

    try:
        grammar = LLMatcher.grammar_from_json_schema(schema, defaults={"lenient": True})
        err = LLMatcher.validate_grammar(grammar)
    except Exception as exc:  # llguidance raises on schemas it cannot even parse
        err = str(exc)
    if err and not err.startswith("WARNING"):
        return one_line(err)[:200]
    return None


def to_tool_result(result: Any, limit: int = RESULT_CHARS) -> ToolResult:
    """A CallToolResult as text for the model: text blocks as they are, other content summarised."""
    parts = [_block_text(b) for b in (getattr(result, "content", None) or [])]
    structured = getattr(result, "structured_content", None)
    if not any(parts) and structured is not None:
        try:
            parts = [json.dumps(structured, ensure_ascii=False)]
        except (TypeError, ValueError):
            parts = ["[structured result that is not JSON]"]
    text = "\n".join(p for p in parts if p).replace("\x00", "")
    omitted = max(0, len(text) - limit)
    if omitted:
        text = text[:limit] + f"\n[output truncated: {omitted} characters omitted; limit {limit} characters]"
    if getattr(result, "is_error", False):
        return ToolResult.failure(_first_line(text) or "the tool reported an error", content=text)
    return ToolResult.success(text or "(no output)")


def _first_line(text: str) -> str:
    line = one_line(text)
    return line if len(line) <= 300 else line[:297] + "..."


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {getattr(block, 'mime_type', None) or 'unknown type'}, {_size(getattr(block, 'data', ''))}]"
    if kind == "resource_link":
        name = getattr(block, "name", None)
        return f"[resource link: {getattr(block, 'uri', '?')}" + (f" ({name})" if name else "") + "]"
    if kind == "resource":
        res = getattr(block, "resource", None)
        uri = getattr(res, "uri", "?")
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return f"[resource {uri}]\n{text}"
        mime = getattr(res, "mime_type", None) or "binary"
        return f"[resource {uri}: {mime}, {_size(getattr(res, 'blob', ''))}]"
    return f"[{kind or 'unknown'} content]"


def _size(b64: str) -> str:
    n = len(b64 or "") * 3 // 4
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB"
