"""Turn pydantic models into clean OpenAI tool parameter schemas, and validation errors into one line.

Why clean: small models see every token of the schema; titles and anyOf-with-null add noise
without information (optional = not in "required").
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    required = list(raw.get("required", []))
    props = {name: _clean(prop, optional=name not in required) for name, prop in raw.get("properties", {}).items()}
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _clean(node: Any, optional: bool = False) -> Any:
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _clean(sub) for name, sub in value.items()}  # keys are names, not keywords
        else:
            out[key] = _clean(value)
    variants = out.get("anyOf")
    if optional and isinstance(variants, list):
        non_null = [v for v in variants if v != {"type": "null"}]
        if len(non_null) == 1 and len(non_null) < len(variants):
            out.pop("anyOf")
            out = {**non_null[0], **out}
    if optional and out.get("default", 0) is None:
        out.pop("default")
    order = {"type": 0, "description": 1}
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], 2)))


def describe_validation_error(exc: ValidationError) -> str:
    """e.g. "missing required argument 'path'; argument 'start_line': Input should be a valid integer (got 'x')"."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        kind = err.get("type", "")
        msg = str(err.get("msg", "invalid value"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if kind == "missing":
            parts.append(f"missing required argument '{loc}'")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument '{loc}'")
        elif not loc:
            parts.append(msg)
        else:
            got = repr(err.get("input"))
            got = got if len(got) <= 60 else got[:57] + "..."
            parts.append(f"argument '{loc}': {msg} (got {got})")
    return "; ".join(parts)
