"""Validate a /v1/chat/completions body into a ChatRequest (400 with the offending `param` on bad input).

Unknown fields are ignored, as OpenAI-compatible servers do: clients send many optional extras.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from localspec.serve.errors import bad_request

ROLES = {"system", "developer", "user", "assistant", "tool", "function", "ipython"}


@dataclass
class ChatRequest:
    messages: list[dict]
    model: str | None = None
    max_tokens: int | None = None  # None: the server default, capped by the room left in the context
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False
    tools: list[dict] = field(default_factory=list)
    tool_choice: str | dict = "auto"  # "auto" | "none" | "required" | {"type": "function", "function": {"name"}}
    parallel_tool_calls: bool = False
    response_format: dict | None = None  # {"type": "json_object"} | {"type": "json_schema", "json_schema": {...}}

    @property
    def forced_tool(self) -> str | None:
        return self.tool_choice["function"]["name"] if isinstance(self.tool_choice, dict) else None

    @property
    def json_schema(self) -> dict | None:
        rf = self.response_format
        return rf["json_schema"].get("schema") if rf and rf["type"] == "json_schema" else None


def _num(body, name, lo, hi, kind=float):
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not isinstance(v, int)):
        raise bad_request(f"'{name}' must be a number" if kind is float else f"'{name}' must be an integer", name)
    if not lo <= v <= hi:
        raise bad_request(f"'{name}' must be between {lo} and {hi}, got {v}", name)
    return kind(v)


def _messages(value) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise bad_request("'messages' must be a non-empty array", "messages")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise bad_request(f"messages[{i}] must be an object with a valid 'role'", f"messages[{i}]")
        if m["role"] == "developer":  # OpenAI's newer name for the system turn
            m = {**m, "role": "system"}
        out.append(m)
    return out


def _tools(value) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("'tools' must be an array", "tools")
    out = []
    for i, t in enumerate(value):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or t.get("type", "function") != "function" or not isinstance(fn.get("name"), str) \
                or not fn["name"]:
            raise bad_request(f"tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}",
                              f"tools[{i}]")
        params = fn.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise bad_request(f"tools[{i}].function.parameters must be a JSON Schema object",
                              f"tools[{i}].function.parameters", "invalid_schema")
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(value, tools: list[dict]):
    if value is None:
        return "auto"
    if value in ("auto", "none", "required"):
        if value == "required" and not tools:
            raise bad_request("tool_choice 'required' needs 'tools'", "tool_choice")
        return value
    name = value.get("function", {}).get("name") if isinstance(value, dict) else None
    if not isinstance(name, str):
        raise bad_request("'tool_choice' must be 'auto', 'none', 'required' or "
                          "{\"type\": \"function\", \"function\": {\"name\": ...}}", "tool_choice")
    if name not in {t["function"]["name"] for t in tools}:
        raise bad_request(f"tool_choice names '{name}', which is not in 'tools'", "tool_choice")
    return {"type": "function", "function": {"name": name}}


def _response_format(value) -> dict | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        js = value.get("json_schema")
        if not isinstance(js, dict) or not isinstance(js.get("schema", {}), dict):
            raise bad_request("response_format.json_schema must be an object with a JSON Schema in 'schema'",
                              "response_format.json_schema", "invalid_schema")
        return {"type": "json_schema", "json_schema": js}
    raise bad_request("response_format.type must be 'text', 'json_object' or 'json_schema'", "response_format")


def _stop(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(s for s in value if s)
    raise bad_request("'stop' must be a string or an array of strings", "stop")


def parse_chat_request(body: Any) -> ChatRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request("'model' must be a string", "model")
    if body.get("n") not in (None, 1):
        raise bad_request("only n=1 is supported", "n")
    if body.get("logprobs"):
        raise bad_request("logprobs are not supported", "logprobs")
    max_tokens = _num(body, "max_completion_tokens", 1, 1 << 30, int)
    if max_tokens is None:
        max_tokens = _num(body, "max_tokens", 1, 1 << 30, int)
    tools = _tools(body.get("tools"))
    opts = body.get("stream_options")
    return ChatRequest(
        messages=_messages(body.get("messages")),
        model=model,
        max_tokens=max_tokens,
        temperature=_num(body, "temperature", 0.0, 2.0),
        top_p=_num(body, "top_p", 0.0, 1.0),
        seed=_num(body, "seed", -(1 << 63), (1 << 64) - 1, int),
        stop=_stop(body.get("stop")),
        stream=bool(body.get("stream")),
        include_usage=bool(isinstance(opts, dict) and opts.get("include_usage")),
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        parallel_tool_calls=body.get("parallel_tool_calls") is True,
        response_format=_response_format(body.get("response_format")),
    )
