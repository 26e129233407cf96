"""Validate a /v1/chat/completions body into a ChatRequest (400 with the offending `param` on bad input).

Types are strict where OpenAI's API is (pydantic strict mode): `"stream": "no"` is not true, `"n": true` is not 1,
`1.0` is not an integer. Unknown fields are ignored, as OpenAI-compatible servers do (clients send many optional
extras), while they are small (IGNORED_BYTES: a bigger one is a 400, not memory spent for nothing); message fields
we do not use are dropped before the template sees them. What is passed on to the
chat template (`chat_template_kwargs`) is the exception: an unknown name there is a 400, not silently nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from localspec.errors import ConfigError
from localspec.serve.api_errors import bad_request
from localspec.serve.values import json_text_problem, lone_surrogate
from localspec.turns import ToolChoice

ROLES = ("system", "developer", "user", "assistant", "tool", "function", "ipython")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI's rule for function names


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
    tool_choice: ToolChoice = ToolChoice()  # "auto" | "none" | "required" | a named function, parsed once
    parallel_tool_calls: bool = False
    response_format: dict | None = None  # {"type": "json_object"} | {"type": "json_schema", "json_schema": {...}}
    thinking: bool = True  # chat_template_kwargs.enable_thinking: a reasoning model thinks before it answers
    reasoning_format: str = "deepseek"  # "deepseek": reasoning as reasoning_content; "none": raw in content

    @property
    def json_schema(self) -> dict | None:
        rf = self.response_format
        return rf["json_schema"].get("schema") if rf and rf["type"] == "json_schema" else None


IGNORED_BYTES = 64 << 10  # an unknown field this big (as JSON, about) is refused, not ignored


def heavier_than(value: Any, limit: int) -> bool:
    """Whether `value` is bigger than `limit` bytes of JSON, about (walked iteratively, stopping at the limit)."""
    todo, weight = [value], 0
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            weight += len(node) + 2
        elif isinstance(node, dict):
            weight += 2 + 4 * len(node) + sum(len(k) for k in node)
            todo.extend(node.values())
        elif isinstance(node, list):
            weight += 2 + len(node)
            todo.extend(node)
        else:
            weight += 8
        if weight > limit:
            return True
    return False


class _Strict(BaseModel):
    # Fields this server does not use are ignored, as OpenAI-compatible servers do, but only while they are small:
    # a big one costs memory for nothing and says the client expected something this server does not do.
    model_config = ConfigDict(strict=True, extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _small_extras(cls, data):
        if isinstance(data, dict):
            known = {f.alias or name for name, f in cls.model_fields.items()}
            for key, value in data.items():
                if key not in known and heavier_than(value, IGNORED_BYTES):
                    raise ValueError(f"'{str(key)[:60]}' is not an argument this server uses, and at over "
                                     f"{IGNORED_BYTES >> 10} KiB too big to ignore")
        return data


class _FunctionCall(_Strict):
    name: str
    arguments: Any = "{}"  # OpenAI sends a JSON string; an object is unambiguous too

    @field_validator("arguments")
    @classmethod
    def _arguments(cls, v):
        if not isinstance(v, (str, dict)):
            raise ValueError("must be a JSON string (or an object)")
        problem = json_text_problem(v) if isinstance(v, str) else None
        if problem:  # decoded again when the prompt is rendered: checked like the body now, not a 500 then
            raise ValueError(problem)
        return v


class _ToolCall(_Strict):
    id: str | None = None
    type: Literal["function"] = "function"
    function: _FunctionCall


class _Message(_Strict):
    role: Literal[ROLES]  # type: ignore[valid-type]
    content: Any = None
    name: str | None = None
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    @field_validator("content")
    @classmethod
    def _content(cls, v):
        if v is None or isinstance(v, str):
            return v
        if not isinstance(v, list):
            raise ValueError("must be a string or an array of content parts")
        for i, part in enumerate(v):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise ValueError(f"part {i} must be an object with a 'type'")
            if part["type"] != "text":
                raise ValueError(f"part {i} has type '{part['type']}': this server takes text parts only")
            if not isinstance(part.get("text"), str):
                raise ValueError(f"part {i} must have a string 'text'")
        return [{"type": "text", "text": p["text"]} for p in v]

    @model_validator(mode="after")
    def _needs_content(self):
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError(f"a '{self.role}' message needs 'content'")
        return self

    def as_dict(self) -> dict:
        role = "system" if self.role == "developer" else self.role  # OpenAI's newer name for the system turn
        out = {"role": role, "content": self.content}
        for key in ("name", "tool_call_id", "reasoning_content"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.tool_calls:
            out["tool_calls"] = [c.model_dump(exclude_none=True) for c in self.tool_calls]
        return out


class _Function(_Strict):
    name: str
    description: str | None = None
    parameters: dict | None = None
    strict: bool | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v):
        if not TOOL_NAME.match(v):
            raise ValueError("must be 1 to 64 letters, digits, '_' or '-'")
        return v


class _Tool(_Strict):
    type: Literal["function"] = "function"
    function: _Function


class _NamedFunction(_Strict):
    name: str


class _NamedChoice(_Strict):
    type: Literal["function"] = "function"
    function: _NamedFunction


class _JsonSchema(_Strict):
    name: str | None = None
    description: str | None = None
    schema_: dict | None = Field(default=None, alias="schema")
    strict: bool | None = None


class _ResponseFormat(_Strict):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: _JsonSchema | None = None

    @model_validator(mode="after")
    def _schema_given(self):
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError("type 'json_schema' needs a 'json_schema' object")
        return self


class _StreamOptions(_Strict):
    include_usage: bool | None = None


class _TemplateKwargs(_Strict):
    # llama-server's and vLLM's per-request template variables. Only the thinking switch is passed on: any other
    # variable would reach the template unchecked, and a misspelt one would silently do nothing.
    model_config = ConfigDict(strict=True, extra="forbid")
    enable_thinking: bool | None = None


# llama-server's names: "deepseek" puts the reasoning in `reasoning_content` ("auto", llama-server's newer default,
# means the same here), "none" leaves the raw `<think>` text in `content`.
REASONING_FORMATS = ("deepseek", "auto", "none")


class _Body(_Strict):
    model: str | None = None
    messages: Annotated[list[_Message], Field(min_length=1)]
    max_tokens: Annotated[int, Field(ge=1, le=1 << 30)] | None = None
    max_completion_tokens: Annotated[int, Field(ge=1, le=1 << 30)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    seed: Annotated[int, Field(ge=-(1 << 63), le=(1 << 64) - 1)] | None = None
    stop: Any = None
    stream: bool | None = None
    stream_options: _StreamOptions | None = None
    tools: list[_Tool] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    response_format: _ResponseFormat | None = None
    n: int | None = None
    logprobs: bool | None = None
    chat_template_kwargs: _TemplateKwargs | None = None
    reasoning_format: Literal[REASONING_FORMATS] | None = None  # type: ignore[valid-type]

    @field_validator("stop")
    @classmethod
    def _stop(cls, v):
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, list) and len(v) <= 16 and all(isinstance(s, str) for s in v):
            return v
        raise ValueError("must be a string or an array of at most 16 strings")

    @field_validator("tool_choice")
    @classmethod
    def _tool_choice(cls, v):
        if v is None or v in ("auto", "none", "required"):
            return v
        if isinstance(v, dict):
            try:
                return _NamedChoice.model_validate(v)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                raise ValueError(f"{param_name(err['loc'])}: {err['msg']}") from None
        raise ValueError("must be 'auto', 'none', 'required' or {\"type\": \"function\", \"function\": "
                         "{\"name\": ...}}")


def param_name(loc: tuple) -> str:
    """pydantic's error location as OpenAI writes `param`: messages[0].content."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + ("schema" if part == "schema_" else str(part))
    return out


def _describe(value: Any) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
    return kind


def _error_message(err: Mapping[str, Any]) -> str:
    param = param_name(err["loc"])
    if err["type"] == "missing":
        return f"Missing required parameter: '{param}'."
    if err["type"] == "extra_forbidden":
        return f"Unrecognized request argument supplied: '{param}' (supported: {_supported(err['loc'])})."
    msg = re.sub(r" or instance of \w+", "", str(err.get("msg", "invalid value")).removeprefix("Value error, "))
    if err["type"].endswith("_type") or err["type"] in ("model_type", "dict_type", "list_type", "literal_error"):
        return f"Invalid type or value for '{param}': {msg} (got {_describe(err.get('input'))})."
    return f"Invalid value for '{param}': {msg}."


def _supported(loc: tuple) -> str:
    model = {"chat_template_kwargs": _TemplateKwargs}.get(loc[0]) if loc else None
    return ", ".join(model.model_fields) if model else "none"


def parse_chat_request(body: Any) -> ChatRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    found = lone_surrogate(body)  # the prompt is encoded as UTF-8 for the tokenizer: a lone surrogate cannot be
    if found:
        param, char = found
        raise bad_request(f"Invalid value for '{param[:200]}': the text holds a lone UTF-16 surrogate ({char}), "
                          "which is not a Unicode character.", param[:200] or None)
    try:
        b = _Body.model_validate(body)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = param_name(err["loc"])[:200] or None  # a key is client text: echo a bounded part of it
        code = "invalid_schema" if where and where.endswith((".parameters", ".schema")) else None
        raise bad_request(_error_message(err)[:500], where, code) from None
    if b.n not in (None, 1):
        raise bad_request("only n=1 is supported", "n")
    if b.logprobs:
        raise bad_request("logprobs are not supported", "logprobs")
    for name in ("temperature", "top_p"):
        if getattr(b, name) is not None and not math.isfinite(getattr(b, name)):
            raise bad_request(f"'{name}' must be a finite number", name)
    tools: list[dict[str, Any]] = [{"type": "function", "function": t.function.model_dump(exclude_none=True)}
                                   for t in b.tools or []]
    names = [t["function"]["name"] for t in tools]
    if len(set(names)) != len(names):
        raise bad_request("tools must have distinct function names", "tools")
    return ChatRequest(
        messages=[m.as_dict() for m in b.messages],
        model=b.model,
        max_tokens=b.max_completion_tokens if b.max_completion_tokens is not None else b.max_tokens,
        temperature=b.temperature,
        top_p=b.top_p,
        seed=b.seed,
        stop=_stops(b.stop),
        stream=bool(b.stream),
        include_usage=bool(b.stream_options and b.stream_options.include_usage),
        tools=tools,
        tool_choice=_choice(b.tool_choice, names),
        parallel_tool_calls=b.parallel_tool_calls is True,
        response_format=_format(b.response_format),
        thinking=not (b.chat_template_kwargs and b.chat_template_kwargs.enable_thinking is False),
        reasoning_format="none" if b.reasoning_format == "none" else "deepseek",
    )


def _stops(value) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(s for s in ([value] if isinstance(value, str) else value) if s)


def _choice(value, names: list[str]) -> ToolChoice:
    if value == "required" and not names:
        raise bad_request("tool_choice 'required' needs 'tools'", "tool_choice")
    try:
        choice = ToolChoice.parse(value if value is None or isinstance(value, str) else value.model_dump())
    except ConfigError as exc:  # an empty name
        raise bad_request(str(exc), "tool_choice") from None
    if choice.name is not None and choice.name not in names:
        raise bad_request(f"tool_choice names '{choice.name}', which is not in 'tools'", "tool_choice")
    return choice


def _format(value: _ResponseFormat | None) -> dict | None:
    if value is None or value.type == "text":
        return None
    if value.type == "json_object":
        return {"type": "json_object"}
    assert value.json_schema is not None  # _ResponseFormat._schema_given
    js = value.json_schema.model_dump(by_alias=True, exclude_none=True)
    return {"type": "json_schema", "json_schema": js}
