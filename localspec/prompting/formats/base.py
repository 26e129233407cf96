"""Shared pieces of every tool-call format: result types, argument coercion, the base class.

A format describes the exact text a model writes to call a tool. Parsing never raises: whatever
cannot be understood is reported in `errors` and its raw text stays in `content`, so the agent
can show it to the user or feed the error back to the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict


@dataclass
class ParseResult:
    content: str
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def coerce_arguments(value: Any) -> tuple[dict | None, str | None]:
    """Arguments may arrive as an object or as a JSON string holding one (OpenAI style)."""
    if value is None:
        return {}, None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}, None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return None, f"arguments string is not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def load_json_prefix(text: str, start: int = 0) -> tuple[Any, int, str | None]:
    """Decode one JSON value at `start` (after whitespace); return (value, end, error)."""
    i = start
    while i < len(text) and text[i].isspace():
        i += 1
    try:
        value, end = json.JSONDecoder().raw_decode(text, i)
    except json.JSONDecodeError as exc:
        if _unfinished(text[i:]):
            return None, i, "truncated JSON (the text ends before the call's JSON is complete)"
        return None, i, f"invalid JSON: {exc.msg} at char {exc.pos - i}"
    return value, end, None


def _unfinished(text: str) -> bool:
    """True when `text` stops inside a string or with brackets still open (cut off, not malformed)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0 or not text.strip()


def call_from_object(obj: Any, arg_keys: tuple[str, ...] = ("arguments", "parameters")) -> tuple[ToolCall | None, str | None]:
    """Turn {"name": ..., "arguments": {...}} (or an OpenAI {"function": {...}} wrapper) into a ToolCall."""
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict) and "name" not in obj:
        obj = obj["function"]
    if not isinstance(obj, dict):
        return None, f"a tool call must be a JSON object, got {type(obj).__name__}"
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, "tool call has no \"name\" string"
    raw = next((obj[k] for k in arg_keys if k in obj), None)
    args, err = coerce_arguments(raw)
    if err:
        return None, f"tool call {name!r}: {err}"
    assert args is not None  # coerce_arguments gives None only with an error
    return ToolCall(name.strip(), args), None


def content_outside(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with the successfully parsed call spans cut out, pieces trimmed and rejoined."""
    pieces, pos = [], 0
    for start, end in sorted(spans):
        pieces.append(text[pos:start])
        pos = end
    pieces.append(text[pos:])
    return "\n".join(p.strip() for p in pieces if p.strip())


def snippet(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_definitions(tools: list[dict]) -> list[dict]:
    """OpenAI form ({"type": "function", "function": {...}}) for bare {"name", ...} definitions too."""
    out = []
    for tool in tools:
        if isinstance(tool, dict) and "function" not in tool and "name" in tool:
            tool = {"type": "function", "function": tool}
        out.append(tool)
    return out


class ToolCallFormat:
    """Base class. Invariant: render_call(...) == call_prefix + render_body(...) + call_suffix and
    it starts with `trigger`, so an engine that sees `trigger` can constrain the rest of the call."""

    name: str = "base"
    trigger: str = ""  # text whose appearance means the model has started a call
    triggers: tuple[str, ...] = ()  # every marker that starts a call (trigger first)
    call_prefix: str = ""
    call_suffix: str = ""
    # How the body between prefix and suffix is spelled, for grammar builders:
    # "json_name_arguments" | "json_name_parameters" | "name_args_json" | "gemma_call" | "python_call"
    body_style: str = ""
    call_example: str = ""  # placeholder example used when we describe the format in a prompt

    def render_body(self, name: str, arguments: dict) -> str:
        raise NotImplementedError

    def render_call(self, name: str, arguments: dict) -> str:
        return self.call_prefix + self.render_body(name, arguments) + self.call_suffix

    def render_result(self, name: str, content: str) -> str:
        """How a tool result is shown to the model when the template has no tool role."""
        return f"<tool_response>\n{content}\n</tool_response>"

    def parse(self, text: str) -> ParseResult:
        try:
            return self._parse(text or "")
        except Exception as exc:  # the contract is "never raises": report instead
            return ParseResult((text or "").strip(), [], [f"{self.name}: could not parse tool calls ({exc})"])

    def _parse(self, text: str) -> ParseResult:
        raise NotImplementedError

    def tool_prompt(self, tools: list[dict]) -> str:
        """System-prompt text that teaches this format, for templates that cannot render tools."""
        schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tool_definitions(tools))
        return (
            "# Tools\n\n"
            "You may call one or more tools to help with the user's request. "
            "The available tools are described by these JSON schemas:\n"
            f"<tools>\n{schemas}\n</tools>\n\n"
            "To call a tool, write one block per call, exactly in this form:\n"
            f"{self.call_example}\n"
            "Each tool result is sent back to you as:\n"
            f"{self.render_result('<tool-name>', '<result>')}"
        )

    def __repr__(self) -> str:
        return f"<ToolCallFormat {self.name}>"
