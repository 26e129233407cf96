"""Gemma-family formats.

FunctionGemma:  <start_function_call>call:name{key:<escape>text<escape>,n:3}<end_function_call>
Gemma 4:        <|tool_call>call:name{key:<|"|>text<|"|>,n:3}<tool_call|>
Gemma 3 (prompted, no special tokens): ```tool_code\\nname(key="text", n=3)\\n```  (results: ```tool_output)

The FunctionGemma-style body is not JSON: keys are bare, strings are wrapped in an escape token,
numbers/booleans/null are bare, and nested objects/lists use {k:v} / [v,...].
"""

from __future__ import annotations

import json
import re

from localspec.prompting.formats.base import ParseResult, ToolCall, ToolCallFormat, content_outside, snippet
from localspec.prompting.formats.pycall import parse_python_calls, render_python_call


class _Truncated(ValueError):
    pass


class _BodyReader:
    """Recursive-descent reader for the `{key:value,...}` body."""

    _key = re.compile(r"[^:{}\[\],\s]+")
    _scalar = re.compile(r"[^,}\]]*")

    def __init__(self, text: str, pos: int, esc: str):
        self.text, self.pos, self.esc = text, pos, esc

    def _ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _peek(self) -> str:
        self._ws()
        if self.pos >= len(self.text):
            raise _Truncated("the message ended inside the call")
        return self.text[self.pos]

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise ValueError(f"expected {char!r} at {snippet(self.text[self.pos:], 20)!r}")
        self.pos += 1

    def _escaped(self) -> str:
        start = self.pos + len(self.esc)
        end = self.text.find(self.esc, start)
        if end == -1:
            raise _Truncated(f"unterminated {self.esc} string")
        self.pos = end + len(self.esc)
        return self.text[start:end]

    def _json_string(self) -> str:
        try:
            value, self.pos = json.JSONDecoder().raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            raise _Truncated("unterminated string") from exc
        return value

    def key(self) -> str:
        self._peek()
        if self.text.startswith(self.esc, self.pos):
            return self._escaped()
        if self.text[self.pos] == '"':
            return self._json_string()
        m = self._key.match(self.text, self.pos)
        if not m:
            raise ValueError(f"expected an argument name at {snippet(self.text[self.pos:], 20)!r}")
        self.pos = m.end()
        return m.group()

    def value(self):
        c = self._peek()
        if self.text.startswith(self.esc, self.pos):
            return self._escaped()
        if c == "{":
            return self.object()
        if c == "[":
            return self._list()
        if c == '"':
            return self._json_string()
        m = self._scalar.match(self.text, self.pos)
        self.pos = m.end()
        if self.pos >= len(self.text):
            raise _Truncated("the message ended inside the call")
        token = m.group().strip()
        if not token or ":" in token:
            # `a:,` or `a:1 b:2` (a separator is missing): refuse rather than guess.
            raise ValueError(f"bad value {token!r}")
        if token in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[token]
        try:
            return json.loads(token)  # numbers
        except json.JSONDecodeError:
            return token  # a bare word: small models drop the escapes; keep it as text

    def _list(self) -> list:
        self._expect("[")
        items: list = []
        if self._peek() == "]":
            self.pos += 1
            return items
        while True:
            items.append(self.value())
            c = self._peek()
            self.pos += 1
            if c == "]":
                return items
            if c != ",":
                raise ValueError(f"expected ',' or ']' in a list, got {c!r}")

    def object(self) -> dict:
        self._expect("{")
        out: dict = {}
        if self._peek() == "}":
            self.pos += 1
            return out
        while True:
            key = self.key()
            self._expect(":")
            out[key] = self.value()
            c = self._peek()
            self.pos += 1
            if c == "}":
                return out
            if c != ",":
                raise ValueError(f"expected ',' or '}}' after argument {key!r}, got {c!r}")


class GemmaCallFormat(ToolCallFormat):
    body_style = "gemma_call"
    _name_re = re.compile(r"\s*call:\s*([A-Za-z0-9_.\-]+)")

    def __init__(self, name: str, start: str, end: str, esc: str, response: tuple[str, str]):
        self.name, self.start, self.end, self.esc, self._response = name, start, end, esc, response
        self.trigger = start
        self.triggers = (start,)
        self.call_prefix = start + "call:"
        self.call_suffix = end
        self.call_example = f"{start}call:<tool-name>{{<argument>:{esc}<text value>{esc},<argument>:<number>}}{end}"

    def _value(self, value) -> str:
        if isinstance(value, str):
            return f"{self.esc}{value}{self.esc}"
        if isinstance(value, dict):
            return "{" + ",".join(f"{k}:{self._value(v)}" for k, v in value.items()) + "}"
        if isinstance(value, (list, tuple)):
            return "[" + ",".join(self._value(v) for v in value) + "]"
        return json.dumps(value)  # numbers, true/false, null

    def render_body(self, name: str, arguments: dict) -> str:
        return f"{name}{self._value(dict(arguments))}"

    def render_result(self, name: str, content: str) -> str:
        open_, close = self._response
        return f"{open_}response:{name}{{value:{self.esc}{content}{self.esc}}}{close}"

    def _parse(self, text: str) -> ParseResult:
        calls, errors, spans, pos = [], [], [], 0
        while (start := text.find(self.start, pos)) != -1:
            nxt = text.find(self.start, start + len(self.start))
            stop = len(text) if nxt == -1 else nxt
            try:
                m = self._name_re.match(text, start + len(self.start))
                if not m:
                    raise ValueError("expected call:<name>")
                reader = _BodyReader(text, m.end(), self.esc)
                args = reader.object()
                end = reader.pos
                rest = text[end:]
                if rest.lstrip().startswith(self.end):
                    end += len(rest) - len(rest.lstrip()) + len(self.end)
                # A missing end token is accepted: engines often stop on it.
            except ValueError as exc:
                errors.append(f"{self.name}: bad tool call {snippet(text[start:stop])!r}: {exc}")
                pos = stop
                continue
            calls.append(ToolCall(m.group(1), args))
            spans.append((start, end))
            pos = end
        return ParseResult(content_outside(text, spans), calls, errors)


class GemmaToolCodeFormat(ToolCallFormat):
    name = "gemma_tool_code"
    trigger = "```tool_code"
    triggers = ("```tool_code",)
    call_prefix = "```tool_code\n"
    call_suffix = "\n```"
    body_style = "python_call"
    call_example = '```tool_code\n<tool-name>(<argument>="<text value>", <argument>=<number>)\n```'

    def render_body(self, name: str, arguments: dict) -> str:
        return render_python_call(name, arguments)

    def render_result(self, name: str, content: str) -> str:
        return f"```tool_output\n{content}\n```"

    def _parse(self, text: str) -> ParseResult:
        calls, errors, spans, pos = [], [], [], 0
        while (start := text.find(self.trigger, pos)) != -1:
            body_start = start + len(self.trigger)
            close = text.find("```", body_start)
            body_end, end = (len(text), len(text)) if close == -1 else (close, close + 3)
            try:
                found = parse_python_calls(text[body_start:body_end])
                if not found:
                    raise ValueError("empty tool_code block")
            except (SyntaxError, ValueError) as exc:
                why = exc.msg if isinstance(exc, SyntaxError) else str(exc)
                if close == -1:
                    why += " (the block is not closed: truncated?)"
                errors.append(f"{self.name}: bad tool call {snippet(text[start:end])!r}: {why}")
            else:
                calls.extend(found)
                spans.append((start, end))
            pos = end
        return ParseResult(content_outside(text, spans), calls, errors)


FUNCTIONGEMMA = GemmaCallFormat(
    "functiongemma", "<start_function_call>", "<end_function_call>", "<escape>",
    ("<start_function_response>", "<end_function_response>"),
)
GEMMA4 = GemmaCallFormat(
    "gemma4", "<|tool_call>", "<tool_call|>", '<|"|>', ("<|tool_response>", "<tool_response|>"),
)
GEMMA_TOOL_CODE = GemmaToolCodeFormat()
