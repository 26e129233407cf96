"""BFCL "AST match" scoring of predicted calls (simplified from bfcl_eval's ast_checker; see
benchmarks/bfcl_subset.md)."""

from __future__ import annotations

_STRIP = str.maketrans("", "", " ,./-_*^")


def _norm_str(s: str) -> str:
    return s.lower().translate(_STRIP).replace("'", '"')


def _value_ok(pred, acceptable: list, schema: dict | None) -> bool:
    return any(_same(pred, want, schema or {}) for want in acceptable)


def _same(pred, want, schema: dict) -> bool:
    typ = schema.get("type")
    if want == "" and pred == "":
        return True
    if isinstance(want, bool) or isinstance(pred, bool):
        return isinstance(want, bool) and isinstance(pred, bool) and want == pred
    if isinstance(want, (int, float)) and isinstance(pred, (int, float)):
        if typ == "integer" and not isinstance(pred, int):
            return False
        return float(pred) == float(want)
    if isinstance(want, str) and isinstance(pred, str):
        return _norm_str(pred) == _norm_str(want)
    if isinstance(want, list) and isinstance(pred, list):
        items = schema.get("items") or {}
        return len(want) == len(pred) and all(_same(p, w, items) for p, w in zip(pred, want))
    if isinstance(want, dict) and isinstance(pred, dict):
        props = schema.get("properties") or {}
        if set(pred) - set(want):
            return False
        for key, options in want.items():
            opts = options if isinstance(options, list) else [options]
            if key not in pred:
                if "" not in opts:
                    return False
                continue
            if not _value_ok(pred[key], opts, props.get(key)):
                return False
        return True
    return False


def call_matches(pred: dict, truth: dict, tools: list[dict]) -> bool:
    """pred: {"name", "arguments"}; truth: {"name", "arguments": {param: [acceptable values]}}."""
    if pred.get("name") != truth["name"]:
        return False
    fn = next((t.get("function", t) for t in tools if t.get("function", t).get("name") == truth["name"]), None)
    if fn is None:
        return False
    params = fn.get("parameters") or {}
    props = params.get("properties") or {}
    args = pred.get("arguments")
    if not isinstance(args, dict):
        return False
    for req in params.get("required") or []:
        if req not in args:
            return False
    want = truth["arguments"]
    for key, value in args.items():
        if key not in props or key not in want:
            return False
        if not _value_ok(value, want[key], props.get(key)):
            return False
    for key, options in want.items():
        if key not in args and "" not in options:
            return False
    return True


def case_correct(preds: list[dict], truths: list[dict], tools: list[dict], category: str) -> bool:
    if category != "parallel":
        return len(preds) == 1 and len(truths) >= 1 and call_matches(preds[0], truths[0], tools)
    if len(preds) != len(truths):
        return False
    return _pair_all(list(range(len(preds))), truths, preds, tools)


def _pair_all(free: list[int], truths: list[dict], preds: list[dict], tools: list[dict]) -> bool:
    """Each expected call paired with a different predicted call, any order (small n: backtracking)."""
    if not truths:
        return True
    first, rest = truths[0], truths[1:]
    for i in free:
        if call_matches(preds[i], first, tools) and _pair_all([j for j in free if j != i], rest, preds, tools):
            return True
    return False
