"""Tool-call text <-> structure for a turn: where a call starts in generated tokens, the grammar for the rest of
it, and reading a call's text back (the one call parser of the agent, the server and the bench).

Why cut at the trigger: free generation stops on the format's trigger (e.g. `<tool_call>`); the call itself is
then generated under the tools' JSON Schemas, continuing from exactly what the model already wrote.
"""

from __future__ import annotations

import json
import secrets
import string
from dataclasses import dataclass
from typing import Any

from localspec.speculative import tool_call_grammar

# Body styles our JSON grammar can produce in a form the format's parser (and the model) accepts:
# Llama 3 reads "arguments" as well as "parameters"; Mistral v11 also takes `[TOOL_CALLS]{"name": ...}`.
JSON_BODY_STYLES = ("json_name_arguments", "json_name_parameters", "name_args_json")
SEPARATOR = "\n"  # between parallel calls: `<suffix>\n<prefix>`

_ID_CHARS = string.ascii_letters + string.digits


def new_call_id() -> str:
    """9 alphanumeric characters: the only id shape Mistral templates accept, and fine for the others."""
    return "".join(secrets.choice(_ID_CHARS) for _ in range(9))


def constrainable(fmt) -> bool:
    return fmt.body_style in JSON_BODY_STYLES


def list_form(fmt) -> bool:
    """Mistral v3 writes `[TOOL_CALLS][{...}, {...}]`: the suffix closes a list, so calls are not blocks."""
    return fmt.call_prefix.endswith("[") and fmt.call_suffix.startswith("]")


@dataclass
class CallStart:
    tokens: list[int]  # generated tokens to keep (they end with the emitted part of the call prefix)
    before: str  # visible text the model wrote before the call
    emitted: str  # the part of fmt.call_prefix already in `tokens` ("" when the call starts from scratch)


def _earliest(data: bytes, triggers) -> tuple[int, bytes] | None:
    hits = [(data.find(t.encode()), t.encode()) for t in triggers if t]
    hits = [h for h in hits if h[0] >= 0]
    return min(hits) if hits else None


def cut_at_trigger(model, fmt, tokens: list[int]) -> CallStart | None:
    """Split generated tokens at the first call trigger; None if the text holds none."""
    pieces = [model.token_bytes(t) for t in tokens]
    data = b"".join(pieces)
    hit = _earliest(data, fmt.triggers or (fmt.trigger,))
    if hit is None:
        return None
    idx, _ = hit
    before = data[:idx].decode("utf-8", "replace")
    after = data[idx:].decode("utf-8", "replace")
    if after and fmt.call_prefix.startswith(after):
        return CallStart(list(tokens), before, after)
    # The trigger is not the start of call_prefix (Llama 3's `{"name"`), or the last token ran past the prefix:
    # go back to the last token boundary before the trigger and let the grammar write the whole call.
    n = size = 0
    while n < len(pieces) and size + len(pieces[n]) <= idx:
        size += len(pieces[n])
        n += 1
    rest = data[size:idx].decode("utf-8", "replace")
    kept = list(tokens[:n]) + (model.tokenize(rest, add_special=False, parse_special=False) if rest else [])
    return CallStart(kept, before, "")


@dataclass(frozen=True)
class Bounds:
    """Limits for strings and arrays the tools' schemas leave unbounded (numbers are always bounded: a small model
    looping inside a number still finishes its call). A suite of small models that loop in a string passes them
    (localspec bench); users' calls are only bounded by the call's token limit."""

    max_string: int | None = None
    max_items: int | None = None


def call_grammar(fmt, tools: list[dict], emitted: str = "", *, parallel: bool = True,
                 bounds: Bounds = Bounds()) -> str:
    """Grammar for the rest of a call whose prefix is partly written: `<rest of prefix> call <suffix>`, and with
    `parallel`, more whole calls after SEPARATOR (list-form formats get one call per turn)."""
    remainder = fmt.call_prefix[len(emitted):] if fmt.call_prefix.startswith(emitted) else fmt.call_prefix
    limits: dict[str, Any] = dict(bound_numbers=True, max_string=bounds.max_string, max_items=bounds.max_items)
    if not parallel or list_form(fmt):
        return tool_call_grammar(tools, prefix=remainder, suffix=fmt.call_suffix, **limits)
    # tool_call_grammar repeats `prefix call suffix` with the separator between; the part of the prefix that
    # was emitted before the grammar took over belongs in the separator for the second and later calls.
    return tool_call_grammar(tools, prefix=remainder, suffix=fmt.call_suffix, separator=SEPARATOR + emitted,
                             parallel=True, **limits)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def parse_constrained(fmt, text: str) -> tuple[list[tuple[str, dict]], str | None]:
    """Read the calls out of constrained output (`text` includes the whole call prefix). Complete JSON objects are
    calls even if the suffix was cut off; an unfinished last call is reported, not returned."""
    decoder = json.JSONDecoder()
    calls: list[tuple[str, dict]] = []
    pos = _skip_space(text, 0)
    while pos < len(text) and text.startswith(fmt.call_prefix, pos):
        pos = _skip_space(text, pos + len(fmt.call_prefix))
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return calls, "the last tool call was cut off by the token limit before it was complete; it was not run"
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return calls, f"the generated tool call is not an object with a name: {text[:80]!r}"
        args = obj.get("arguments", obj.get("parameters", {}))
        calls.append((obj["name"], args if isinstance(args, dict) else {}))
        if not text.startswith(fmt.call_suffix, pos):
            break
        pos += len(fmt.call_suffix)
        if not text.startswith(SEPARATOR, pos):
            break
        pos += len(SEPARATOR)
    if not calls:
        return calls, f"no tool call in the generated text {text[:80]!r}"
    return calls, None


def parse_calls(fmt, text: str) -> tuple[list[tuple[str, dict]], str | None]:
    """The calls in a message: the canonical form our grammar writes first, else the format's own parser (formats
    whose call body is not JSON, text a model wrote freely). (calls, why there are none or the last is missing)."""
    calls, error = parse_constrained(fmt, text)
    if calls:
        return calls, error
    result = fmt.parse(text)
    if result.calls:
        return [(c.name, c.arguments) for c in result.calls], None
    return calls, error


def is_call(fmt, text: str, tools) -> bool:
    """Whether a whole-output answer (JSON or a call, under one grammar) is the call: it starts with the call
    prefix, or in prefix-less formats (Llama 3 JSON) it is an object with exactly a call's keys and a known name."""
    prefix = fmt.call_prefix.strip()
    if prefix:
        return text.lstrip().startswith(prefix)
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    return isinstance(obj, dict) and set(obj) == {"name", "arguments"} and \
        obj["name"] in {t["function"]["name"] for t in tools}
