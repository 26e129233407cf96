"""Formats whose call body is JSON: Hermes/Qwen `<tool_call>`, Llama 3.x, Mistral (both generations)."""

from __future__ import annotations

import json
import re
from typing import cast

from localspec.prompting.formats.base import (
    ParseResult,
    ToolCall,
    ToolCallFormat,
    call_from_object,
    coerce_arguments,
    content_outside,
    load_json_prefix,
    snippet,
)
from localspec.prompting.formats.pycall import parse_python_calls


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


class HermesFormat(ToolCallFormat):
    """`<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`, one block per call (Hermes 2 Pro,
    Qwen 2.5/3). Also our generic convention for templates that know nothing about tools."""

    trigger = "<tool_call>"
    triggers = ("<tool_call>",)
    call_prefix = "<tool_call>\n"
    call_suffix = "\n</tool_call>"
    body_style = "json_name_arguments"
    call_example = '<tool_call>\n{"name": <tool-name>, "arguments": <arguments-json-object>}\n</tool_call>'
    _close = "</tool_call>"

    def __init__(self, name: str = "hermes"):
        self.name = name

    def render_body(self, name: str, arguments: dict) -> str:
        return _dumps({"name": name, "arguments": arguments})

    def _parse(self, text: str) -> ParseResult:
        calls: list[ToolCall] = []
        errors: list[str] = []
        spans: list[tuple[int, int]] = []
        pos = 0
        while (start := text.find(self.trigger, pos)) != -1:
            body_start = start + len(self.trigger)
            close = text.find(self._close, body_start)
            nxt = text.find(self.trigger, body_start)
            if close == -1 or (nxt != -1 and nxt < close):
                # No closing tag (stop sequence ate it, or the message was cut): the JSON decides.
                end_body = nxt if nxt != -1 else len(text)
                end = end_body
            else:
                end_body, end = close, close + len(self._close)
            body = text[body_start:end_body]
            value, vend, err = load_json_prefix(body)
            if err is None and body[vend:].strip():
                err = f"unexpected text after the JSON: {snippet(body[vend:])!r}"
            if err is None:
                items = value if isinstance(value, list) else [value]
                found = [call_from_object(item) for item in items]
                err = next((e for _, e in found if e), None)
            if err:
                errors.append(f"{self.name}: bad tool call {snippet(text[start:end])!r}: {err}")
            else:
                calls.extend(cast(ToolCall, c) for c, _ in found)  # no error: every item gave a call
                spans.append((start, end))
            pos = end
        return ParseResult(content_outside(text, spans), calls, errors)


class Llama3JsonFormat(ToolCallFormat):
    """Llama 3.1-3.3 custom tools: a bare `{"name": ..., "parameters": {...}}` message; built-in tools
    after `<|python_tag|>` (JSON or `tool.call(key="value")`)."""

    name = "llama3_json"
    trigger = '{"name"'
    triggers = ('{"name"', "<|python_tag|>")
    call_prefix = ""
    call_suffix = ""
    body_style = "json_name_parameters"
    call_example = '{"name": <tool-name>, "parameters": <arguments-json-object>}'
    _tag = "<|python_tag|>"
    _start = re.compile(r'\{\s*"name"\s*:')
    _next_line_call = re.compile(r'\n\s*(?:<\|python_tag\|>|\{\s*"name"\s*:)')

    def render_body(self, name: str, arguments: dict) -> str:
        return _dumps({"name": name, "parameters": arguments})

    def _parse(self, text: str) -> ParseResult:
        calls: list[ToolCall] = []
        errors: list[str] = []
        spans: list[tuple[int, int]] = []
        pos = 0
        while True:
            tag = text.find(self._tag, pos)
            m = self._start.search(text, pos)
            if tag == -1 and m is None:
                break
            if tag != -1 and (m is None or tag < m.start()):
                after = tag + len(self._tag)
                first = after + len(text[after:]) - len(text[after:].lstrip())
                if text.startswith("{", first):
                    pos = self._take_json(text, tag, first, calls, errors, spans, require=True)
                else:
                    pos = self._take_python(text, tag, after, calls, errors, spans)
            else:
                assert m is not None  # tag == -1 and m is None broke out above
                pos = self._take_json(text, m.start(), m.start(), calls, errors, spans, require=False)
        return ParseResult(content_outside(text, spans), calls, errors)

    def _take_json(self, text, span_start, obj_start, calls, errors, spans, require) -> int:
        value, end, err = load_json_prefix(text, obj_start)
        if err:
            # Resume at the next line that starts a call: the rest of this one is unusable.
            nxt = self._next_line_call.search(text, obj_start + 1)
            stop = nxt.start() if nxt else len(text)
            errors.append(f"{self.name}: bad tool call {snippet(text[span_start:stop])!r}: {err}")
            return stop
        is_call = isinstance(value, dict) and "name" in value and ("parameters" in value or "arguments" in value)
        if not is_call and not require:
            return end  # ordinary JSON in the answer, not a call
        call, err = call_from_object(value)
        if err:
            errors.append(f"{self.name}: bad tool call {snippet(text[span_start:end])!r}: {err}")
            return end
        # Several calls are sometimes separated by ';'.
        m = re.match(r"\s*;", text[end:])
        end += m.end() if m else 0
        calls.append(call)
        spans.append((span_start, end))
        return end

    def _take_python(self, text, tag, start, calls, errors, spans) -> int:
        line_end = text.find("\n", start)
        end = len(text) if line_end == -1 else line_end
        try:
            found = parse_python_calls(text[start:end], strip_call_suffix=True)
        except (SyntaxError, ValueError) as exc:
            errors.append(f"{self.name}: bad built-in tool call {snippet(text[tag:end])!r}: {exc}")
            return end
        calls.extend(found)
        spans.append((tag, end))
        return end


class MistralFormat(ToolCallFormat):
    """Mistral v3 tokenizers: `[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`."""

    name = "mistral"
    trigger = "[TOOL_CALLS]"
    triggers = ("[TOOL_CALLS]",)
    call_prefix = "[TOOL_CALLS]["
    call_suffix = "]"
    body_style = "json_name_arguments"
    call_example = '[TOOL_CALLS][{"name": <tool-name>, "arguments": <arguments-json-object>}]'

    def render_body(self, name: str, arguments: dict) -> str:
        return _dumps({"name": name, "arguments": arguments})

    def _parse(self, text: str) -> ParseResult:
        calls: list[ToolCall] = []
        errors: list[str] = []
        spans: list[tuple[int, int]] = []
        pos = 0
        while (start := text.find(self.trigger, pos)) != -1:
            pos = self._take_one(text, start, start + len(self.trigger), calls, errors, spans)
        return ParseResult(content_outside(text, spans), calls, errors)

    def _take_json(self, text, start, after, calls, errors, spans) -> int:
        value, end, err = load_json_prefix(text, after)
        if err is None:
            items = value if isinstance(value, list) else [value]
            found = [call_from_object(item) for item in items]
            err = next((e for _, e in found if e), None)
        if err:
            nxt = text.find(self.trigger, after)
            stop = len(text) if nxt == -1 else nxt
            errors.append(f"{self.name}: bad tool call {snippet(text[start:stop])!r}: {err}")
            return stop
        calls.extend(c for c, _ in found)
        spans.append((start, end))
        return end

    _take_one = _take_json


class MistralArgsFormat(MistralFormat):
    """Newer Mistral tokenizers (v11+: Mistral Small 3.x, Devstral, Magistral):
    `[TOOL_CALLS]name[ARGS]{...}`, optionally `[CALL_ID]id` before `[ARGS]`; the old JSON list is also accepted."""

    name = "mistral_args"
    call_prefix = "[TOOL_CALLS]"
    call_suffix = ""
    body_style = "name_args_json"
    call_example = "[TOOL_CALLS]<tool-name>[ARGS]<arguments-json-object>"
    _head = re.compile(r"\s*([^\[\]{}\s]+)\s*(?:\[CALL_ID\]\s*([^\[\s]*)\s*)?\[ARGS\]")

    def render_body(self, name: str, arguments: dict) -> str:
        return f"{name}[ARGS]{_dumps(arguments)}"

    def _take_one(self, text, start, after, calls, errors, spans) -> int:
        if text[after:].lstrip().startswith(("[", "{")):
            return self._take_json(text, start, after, calls, errors, spans)
        m = self._head.match(text, after)
        nxt = text.find(self.trigger, after)
        stop = len(text) if nxt == -1 else nxt
        if not m or m.end() > stop:
            errors.append(f"{self.name}: bad tool call {snippet(text[start:stop])!r}: expected name[ARGS]{{...}}")
            return stop
        value, end, err = load_json_prefix(text, m.end())
        if err is None:
            value, err = coerce_arguments(value)
        if err:
            errors.append(f"{self.name}: bad tool call {snippet(text[start:stop])!r}: {err}")
            return stop
        calls.append(ToolCall(m.group(1), value))
        spans.append((start, end))
        return end
