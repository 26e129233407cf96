"""Whether a JSON Schema allows any finite value at all: a schema that requires itself has none.

Why: `{"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]}` is valid JSON Schema, and
llguidance builds a grammar for it, but every value would be `{"x": {"x": ...}}` without end. The engine then
generated until the grammar gave up or max_tokens ran out, and the answer was an empty or cut-off content with
finish_reason "stop" or "length" instead of the 400 the server promises for a schema it cannot enforce. Where the
recursion is behind a choice the first tokens make (`{"y": 1, "x": ...}`), no check of the grammar's first steps
finds it (grammar.followable); this one reads the schema.

The reading is the least fixed point of "has a finite value" over the schema's local `$ref`s: a reference has
one only once its target was shown to have one without it. Keywords that only narrow a value that exists
(`pattern`, `minimum`, `maxLength`, ...) are not judged here: the grammar check covers what it can of those.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

_MAX_REFS = 10_000  # references read in one schema; a request body holds at most a few hundred in practice
_SCALARS = {"null", "boolean", "string", "number", "integer"}


def never_satisfied(schema: Any) -> str:
    """'' when some finite value satisfies `schema` (as far as its structure says), else why not, in words."""
    refs: set[str] = set()
    _collect_refs(schema, refs)
    if len(refs) > _MAX_REFS:
        return ""  # too many to judge here: the grammar check still runs
    finite: set[str] = set()
    changed = True
    while changed:  # each round adds at least one reference, or ends
        changed = False
        for ref in refs - finite:
            target = _resolve(schema, ref)
            if target is _UNKNOWN or _has_value(target, schema, finite, 0):
                finite.add(ref)
                changed = True
    if _has_value(schema, schema, finite, 0):
        return ""
    cycle = sorted(refs - finite)
    where = f" (through $ref {', '.join(cycle[:3])})" if cycle else ""
    return f"no finite value satisfies this schema{where}: it requires itself, or allows nothing"


_UNKNOWN = object()


def _collect_refs(node: Any, out: set[str]) -> None:
    todo = [node]
    while todo and len(out) <= _MAX_REFS:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                out.add(ref)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)


def _resolve(root: Any, ref: str) -> Any:
    """The schema a local reference (`#`, `#/$defs/a`, `#/properties/x~1y`) names; _UNKNOWN when none."""
    node = root
    pointer = unquote(ref[1:])
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return _UNKNOWN  # an anchor (`#name`): not followed here
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _UNKNOWN
    return node


def _has_value(node: Any, root: Any, finite: set[str], depth: int) -> bool:
    """Whether `node` allows a finite value, given the references known to (`finite`)."""
    if depth > 200:  # the body is at most 64 deep; a schema this deep is not ours to judge
        return True
    if node is False:
        return False
    if not isinstance(node, dict):
        return True
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#") and ref not in finite:
        return False
    sub = lambda s: _has_value(s, root, finite, depth + 1)  # noqa: E731
    if isinstance(node.get("allOf"), list) and not all(sub(s) for s in node["allOf"]):
        return False
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list) and not any(sub(s) for s in node[key]):
            return False
    if "enum" in node and isinstance(node["enum"], list) and not node["enum"]:
        return False
    if "const" in node or "enum" in node:
        return True
    types = node.get("type")
    kinds = {types} if isinstance(types, str) else set(types) if isinstance(types, list) else None
    if kinds is None:  # no type: any kind of value, and a scalar always has one
        return True
    if kinds & _SCALARS:
        return True
    if "object" in kinds and _object_has_value(node, sub):
        return True
    return "array" in kinds and _array_has_value(node, sub)


def _object_has_value(node: dict, sub) -> bool:
    given = node.get("properties")
    props: dict = given if isinstance(given, dict) else {}
    extra = node.get("additionalProperties", True)
    for name in node.get("required") or []:
        if not isinstance(name, str):
            continue
        if not sub(props[name] if name in props else extra):
            return False
    return True


def _array_has_value(node: dict, sub) -> bool:
    need = node.get("minItems", 0)
    if not isinstance(need, int) or need <= 0:
        return True
    given = node.get("prefixItems")
    prefix: list = given if isinstance(given, list) else []
    if not all(sub(s) for s in prefix[:need]):
        return False
    return need <= len(prefix) or sub(node.get("items", True))
