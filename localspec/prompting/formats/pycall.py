"""Python-style calls `name(key="value", n=1)`: used by Gemma's ```tool_code``` convention and by
Llama 3.1's built-in tools (`<|python_tag|>brave_search.call(query="...")`).

Parsed with `ast` and `literal_eval` only: the text is never executed.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from localspec.prompting.formats.base import ToolCall

_JSON_NAMES = {"true": True, "false": False, "null": None}


def _literal(node: ast.AST) -> Any:
    # Models trained on JSON often write true/false/null inside Python calls; accept them.
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        # A `**spread` key is None: literal_eval refuses it (ValueError), as for any other non-literal.
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    return ast.literal_eval(node)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _call(node: ast.Call, strip_call_suffix: bool) -> ToolCall:
    name = _dotted(node.func)
    if not name:
        raise ValueError("the called object is not a plain name")
    if strip_call_suffix and name.endswith(".call"):
        name = name[: -len(".call")]
    if node.args:
        raise ValueError(f"{name}: positional arguments are not supported, use key=value")
    args = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"{name}: **kwargs is not supported")
        args[kw.arg] = _literal(kw.value)
    return ToolCall(name, args)


def parse_python_calls(source: str, strip_call_suffix: bool = False) -> list[ToolCall]:
    """Every call in `source`: one per statement, `[a(), b()]` lists, and `print(a())` wrappers.
    Raises SyntaxError/ValueError for anything else (callers turn that into an error entry)."""
    tree = ast.parse(source.strip(), mode="exec")
    calls: list[ToolCall] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            raise ValueError("only call expressions are allowed")
        items = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]
        for item in items:
            if not isinstance(item, ast.Call):
                raise ValueError("expected a function call")
            if _dotted(item.func) == "print" and len(item.args) == 1 and isinstance(item.args[0], ast.Call):
                item = item.args[0]
            calls.append(_call(item, strip_call_suffix))
    return calls


def python_literal(value: Any) -> str:
    """Python source for a JSON value (json.dumps strings are valid Python string literals)."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{python_literal(str(k))}: {python_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    return python_literal(str(value))


def render_python_call(name: str, arguments: dict) -> str:
    return f"{name}(" + ", ".join(f"{k}={python_literal(v)}" for k, v in arguments.items()) + ")"
