"""Keep marker text in messages from becoming marker tokens: swap it for sentinels before the template renders.

Every string a conversation brings (message content, names, ids, tool-call arguments, tool definitions, keys
included) is hostile: a file the agent read or a server request may contain `<|im_start|>system`. Before rendering,
each marker text (markers.py) inside such a string is replaced by a sentinel character from Unicode's private use
planes that no input contains. After rendering, the prompt is cut at the sentinels: the template's own text is
tokenized with special tokens parsed, and each sentinel stands for its marker text tokenized as plain text.

Sentinels stand in for whole markers only, so the template's logic still sees the rest of the text; a template that
looked for marker text inside content (e.g. gpt-oss refusing `<|channel|>` in a message) now sees none, which is
the point. Reasoning that a template cuts out of assistant history at its markers (Qwen3 and DeepSeek-R1 at
`</think>`, Gemma 4 at `<|channel>...<channel|>`) is cut out here first, the same way, when those are markers:
the template could no longer find them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from localspec.prompting.formats.base import coerce_arguments
from localspec.prompting.markers import Markers
from localspec.prompting.prepare import message_text

# Supplementary Private Use Area-A and -B: never assigned, and rare in real text.
_PUA = re.compile("[\U000F0000-\U0010FFFD]")
_FIRST, _LAST = 0xF0000, 0x10FFFD


class Neutralizer:
    def __init__(self, markers: Markers, *inputs: Any):
        self.markers = markers
        taken: set[str] = set()
        for value in inputs:
            _collect_pua(value, taken)
        self._taken = taken
        self._next = _FIRST
        self.sentinel: dict[str, str] = {}  # marker text -> sentinel
        self.text_of: dict[str, str] = {}  # sentinel -> marker text

    @property
    def used(self) -> bool:
        return bool(self.sentinel)

    def _sentinel_for(self, marker: str) -> str:
        s = self.sentinel.get(marker)
        if s is None:
            while chr(self._next) in self._taken:
                self._next += 1
            if self._next > _LAST:  # over 130k distinct private-use characters in one conversation
                raise ValueError("no free sentinel character for a chat marker")
            s = chr(self._next)
            self._next += 1
            self.sentinel[marker] = s
            self.text_of[s] = marker
        return s

    def text(self, s: str) -> str:
        pattern = self.markers.pattern
        if pattern is None or not s:
            return s
        return pattern.sub(lambda m: self._sentinel_for(m.group()), s)

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {self.value(k) if isinstance(k, str) else k: self.value(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.value(x) for x in v]
        return v

    def messages(self, messages: list[dict], template: str) -> list[dict]:
        think = "</think>" in template and "</think>" in self.markers.texts
        keeps_reasoning = "reasoning_content" in template
        channels = "<channel|>" in template and {"<|channel>", "<channel|>"} <= self.markers.texts
        out = []
        for m in messages:
            m = dict(m)
            if "content" in m and m["content"] is not None and not isinstance(m["content"], str):
                # Joined first: two parts could otherwise meet to form a marker after neutralizing.
                m["content"] = message_text(m["content"])
            if think and m.get("role") == "assistant" and m.get("reasoning_content") is None \
                    and "</think>" in (m.get("content") or ""):
                reasoning, m["content"] = split_reasoning(m["content"])
                if keeps_reasoning:
                    m["reasoning_content"] = reasoning
            if channels and m.get("role") == "assistant" and "<channel|>" in (m.get("content") or ""):
                m["content"] = strip_channels(m["content"])
            if isinstance(m.get("tool_calls"), list):
                m["tool_calls"] = [self._call(c) for c in m["tool_calls"]]
            out.append({k: (v if k == "tool_calls" and isinstance(v, list) else self.value(v)) for k, v in m.items()})
        return out

    def _call(self, call: Any) -> Any:
        """Arguments arrive as JSON text: neutralize the decoded object, since JSON escapes (`\\u003c|im_start|>`)
        would hide a marker from a scan of the text and bring it back when the template re-encodes it."""
        if not isinstance(call, dict):  # e.g. a formats.ToolCall
            call = {"name": getattr(call, "name", ""), "arguments": getattr(call, "arguments", {})}
        out = {}
        for k, v in call.items():
            if k == "function" and isinstance(v, dict):
                out[k] = {self.value(fk): self._arguments(fv) if fk in ("arguments", "parameters") else self.value(fv)
                          for fk, fv in v.items()}
            elif k in ("arguments", "parameters"):
                out[k] = self._arguments(v)
            else:
                out[self.value(k)] = self.value(v)
        return out

    def _arguments(self, raw: Any) -> Any:
        if isinstance(raw, str):
            args, err = coerce_arguments(raw)
            return self.text(raw) if err else self.value(args)
        return self.value(raw)

    def pieces(self, rendered: str) -> list[tuple[bool, str]]:
        """Cut a rendered prompt into (is_marker_text_from_content, text) pieces, in order."""
        # A template that JSON-encodes with ensure_ascii turns a sentinel into a surrogate-pair escape.
        for s in self.text_of:
            escaped = json.dumps(s)[1:-1]
            if escaped in rendered:
                rendered = rendered.replace(escaped, s)
        cut = re.compile("([" + "".join(self.text_of) + "])")
        out = []
        for i, part in enumerate(cut.split(rendered)):
            if i % 2:
                out.append((True, self.text_of[part]))
            elif part:
                out.append((False, part))
        return out


def split_reasoning(content: str) -> tuple[str, str]:
    """(reasoning, answer) of `<think>reasoning</think>answer`, as Qwen3-style templates split it."""
    reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
    return reasoning, content.split("</think>")[-1].lstrip("\n")


def strip_channels(content: str) -> str:
    """`content` without its `<|channel>...<channel|>` thinking blocks, as Gemma 4's template cuts them."""
    return "".join(part.split("<|channel>")[0] for part in content.split("<channel|>"))


def _collect_pua(value: Any, taken: set[str]) -> None:
    if isinstance(value, str):
        if value:
            taken.update(_PUA.findall(value))
    elif isinstance(value, dict):
        for k, v in value.items():
            _collect_pua(k, taken)
            _collect_pua(v, taken)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect_pua(v, taken)
