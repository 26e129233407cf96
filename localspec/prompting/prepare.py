"""Adapt an OpenAI-style conversation to what a chat template can render.

Templates that know tools get the conversation as-is (normalised). For templates that do not
mention `tools`, the tool definitions and the call convention of the detected format (the generic
Hermes convention: one `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` block per call)
go into the system prompt, and assistant tool calls / tool results become plain text turns,
so any chat model can take part in the agent loop.
"""

from __future__ import annotations

import json
from typing import Any

from localspec.prompting.chatml import CHATML_TEMPLATE
from localspec.prompting.formats import detect_format
from localspec.prompting.formats.base import coerce_arguments, tool_definitions
from localspec.prompting.jinja_env import template_caps


def message_text(content: Any) -> str:
    """A message's content as one string (text parts joined, other values as JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        # OpenAI multi-part content: keep the text parts.
        return "".join(str(p.get("text", "")) for p in content if p.get("type", "text") == "text")
    return json.dumps(content, ensure_ascii=False)


def _call_dict(call: Any) -> dict:
    """One tool call in OpenAI form with `arguments` as an object (what HF templates expect)."""
    if not isinstance(call, dict):  # e.g. a formats.ToolCall
        call = {"name": getattr(call, "name", ""), "arguments": getattr(call, "arguments", {})}
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    raw = fn.get("arguments", fn.get("parameters"))
    args, err = coerce_arguments(raw)
    out = {"type": "function", "function": {"name": fn.get("name", ""), "arguments": raw if err else args}}
    if call.get("id") is not None:
        out["id"] = call["id"]
    return out


def _normalize(msg: dict) -> dict:
    m = dict(msg)
    m["content"] = message_text(m.get("content"))
    if m.get("tool_calls"):
        m["tool_calls"] = [_call_dict(c) for c in m["tool_calls"]]
    else:
        m.pop("tool_calls", None)
    return m


def prepare_messages(
    template: str | None, messages: list[dict], tools: list[dict] | None = None
) -> tuple[list[dict], list[dict] | None]:
    """Return (messages, tools) ready to hand to the template: `tools` is None when the template
    cannot render them (they were injected into the system prompt instead)."""
    source = template or CHATML_TEMPLATE
    caps = template_caps(source)
    fmt = detect_format(source)
    tools = tool_definitions(tools) if tools else None
    inject = bool(tools) and not caps.tools
    convert_calls = inject or not caps.tool_calls
    convert_results = inject or not caps.tool_role

    out: list[dict] = []
    names: dict[str, str] = {}  # tool_call_id -> tool name, to label results
    last_is_result = False  # the previous output turn is converted tool results (merge into it)
    for raw in messages:
        m = _normalize(raw)
        role = m.get("role")
        for c in m.get("tool_calls", []):
            if "id" in c:
                names[c["id"]] = c["function"]["name"]
        if role == "assistant" and m.get("tool_calls") and convert_calls:
            rendered = [
                fmt.render_call(c["function"]["name"], c["function"]["arguments"] if isinstance(c["function"]["arguments"], dict) else {})
                for c in m["tool_calls"]
            ]
            text = "\n".join(([m["content"].strip()] if m["content"].strip() else []) + rendered)
            out.append({"role": "assistant", "content": text})
            last_is_result = False
        elif role in ("tool", "ipython") and convert_results:
            name = m.get("name") or names.get(m.get("tool_call_id", ""), "")
            text = fmt.render_result(name, m["content"])
            if last_is_result:
                out[-1]["content"] += "\n" + text
            else:
                out.append({"role": "user", "content": text})
            last_is_result = True
        elif role == "user" and last_is_result:
            # Strict templates demand user/assistant alternation: results and the next user turn share one.
            out[-1]["content"] += "\n\n" + m["content"]
            last_is_result = False
        else:
            out.append(m)
            last_is_result = False

    if inject:
        assert tools is not None  # inject needs tools
        prompt = fmt.tool_prompt(tools)
        if out and out[0].get("role") == "system":
            first = out[0]["content"]
            out[0] = {**out[0], "content": f"{first}\n\n{prompt}" if first.strip() else prompt}
        else:
            out.insert(0, {"role": "system", "content": prompt})
    return out, (tools if caps.tools else None)


def fold_system(messages: list[dict]) -> list[dict]:
    """For templates that reject a system turn: prepend it to the first user turn."""
    system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system" and m.get("content"))
    rest = [m for m in messages if m.get("role") != "system"]
    if not system:
        return rest
    for i, m in enumerate(rest):
        if m.get("role") == "user":
            rest[i] = {**m, "content": f"{system}\n\n{m.get('content', '')}"}
            return rest
    return [{"role": "user", "content": system}] + rest


def split_parallel_calls(messages: list[dict]) -> list[dict]:
    """For templates that allow one call per turn (Llama 3.1): assistant(a, b), tool(a), tool(b)
    becomes assistant(a), tool(a), assistant(b), tool(b)."""
    out: list[dict] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        calls = m.get("tool_calls") or []
        if m.get("role") != "assistant" or len(calls) < 2:
            out.append(m)
            i += 1
            continue
        j = i + 1
        while j < len(messages) and messages[j].get("role") in ("tool", "ipython"):
            j += 1
        results = list(messages[i + 1 : j])
        for k, call in enumerate(calls):
            out.append({**m, "content": m.get("content", "") if k == 0 else "", "tool_calls": [call]})
            match = next((r for r in results if call.get("id") and r.get("tool_call_id") == call.get("id")), None)
            if match is None and results and not results[0].get("tool_call_id"):
                match = results[0]  # no ids: results come in call order
            if match is not None:
                results.remove(match)
                out.append(match)
        out.extend(results)
        i = j
    return out
