"""Grammar constraints with llguidance: tool calls under their JSON Schemas, and JSON response formats.

The engine and the drafters see only the Constraint interface (speculative/constraint.py); this module owns the
llguidance matcher, its token masks, forced tokens and rollback. Building llguidance's tokenizer costs 0.2-1.5 s,
so it is built once per model.
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from typing import TYPE_CHECKING, Sequence

import llguidance
import llguidance.llamacpp
import numpy as np
from llguidance import LLMatcher

from localspec.errors import ConfigError
from localspec.speculative.constraint import Constraint

if TYPE_CHECKING:
    from llguidance._lib import JsonCompileOptions

# Canonical JSON (the separators json.dumps uses): fixed whitespace means more tokens are forced and drafts
# from earlier calls match token for token.
JSON_OPTIONS: JsonCompileOptions = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}

_tokenizers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_tok_lock = threading.Lock()


def lltokenizer(model) -> "llguidance.LLTokenizer":
    """llguidance's view of a model's vocabulary (cached per Model object)."""
    with _tok_lock:
        tok = _tokenizers.get(model)
        if tok is None:
            tok = llguidance.llamacpp.lltokenizer_from_vocab(model.vocab, eos_token=sorted(model.eog_tokens))
            _tokenizers[model] = tok
        return tok


# Number bounds for `bound_numbers`: JSON's exactly representable integers (2^53 - 1), and for other numbers
# 15 integer digits and 10 decimals; enough for real arguments, finite for a model looping inside a number.
MAX_INT = 2 ** 53 - 1
NUMBER_BOUNDS = {"minimum": -1e15, "maximum": 1e15, "multipleOf": 1e-10}


def _bounded(schema, max_string: int | None = None, max_items: int | None = None, bound_numbers: bool = False):
    """Objects without an explicit additionalProperties get `false` (a call must not invent parameters); with
    limits, strings, arrays and numbers that declare no bound get one, so a model stuck repeating itself still
    ends with a complete call instead of running into max_tokens."""
    if isinstance(schema, list):
        return [_bounded(v, max_string, max_items, bound_numbers) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (_bounded(v, max_string, max_items, bound_numbers)
               if k not in ("enum", "const", "default", "examples") else v)
           for k, v in schema.items()}
    typ = out.get("type")
    if typ == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if max_string and typ == "string" and "maxLength" not in out and "enum" not in out and "pattern" not in out:
        out["maxLength"] = max_string
    if max_items and typ == "array" and "maxItems" not in out:
        out["maxItems"] = max_items
    if bound_numbers and typ in ("integer", "number") and "enum" not in out and "const" not in out:
        bounds = {"minimum": -MAX_INT, "maximum": MAX_INT} if typ == "integer" else NUMBER_BOUNDS
        has_min = "minimum" in out or "exclusiveMinimum" in out
        has_max = "maximum" in out or "exclusiveMaximum" in out
        for key, value in bounds.items():
            if not ((key == "minimum" and has_min) or (key == "maximum" and has_max) or key in out):
                out[key] = value
    return out


def call_schema(tool: dict, *, max_string: int | None = None, max_items: int | None = None,
                bound_numbers: bool = False) -> dict:
    """JSON Schema of one call {"name": <tool>, "arguments": <its parameters>} from an OpenAI-style tool."""
    fn = tool.get("function", tool)
    params = _bounded(fn.get("parameters") or {"type": "object", "properties": {}}, max_string, max_items,
                      bound_numbers)
    return {"type": "object", "properties": {"name": {"const": fn["name"]}, "arguments": params},
            "required": ["name", "arguments"], "additionalProperties": False}


def tools_schema(tools: list[dict], **limits) -> dict:
    schemas = [call_schema(t, **limits) for t in tools]
    if not schemas:
        raise ConfigError("tool choice needs at least one tool")
    schema = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    return {**schema, "x-guidance": {**JSON_OPTIONS, "lenient": True}}


def _lark_str(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid Lark string literal


def tool_call_grammar(tools: list[dict], *, prefix: str = "", suffix: str = "", separator: str | None = None,
                      parallel: bool = False, max_string: int | None = None, max_items: int | None = None,
                      bound_numbers: bool = False, max_calls: int | None = None) -> str:
    """Lark grammar for `prefix call suffix`, or with `parallel`, several calls joined by `separator`
    (default: a newline; at most `max_calls`). `max_string` / `max_items` / `bound_numbers` bound strings,
    arrays and numbers whose schema sets no limit."""
    schema = json.dumps(tools_schema(tools, max_string=max_string, max_items=max_items, bound_numbers=bound_numbers))
    call = f"%json {schema}"
    one = " ".join(x for x in (_lark_str(prefix) if prefix else "", "call", _lark_str(suffix) if suffix else "") if x)
    if parallel:
        sep = separator if separator is not None else "\n"
        more = "*" if not max_calls else f"{{0,{max_calls - 1}}}"
        rule = f"start: one ({_lark_str(sep)} one){more}\none: {one}\n"
    else:
        rule = f"start: {one}\n"
    lark = rule + f"call: {call}\n"
    return LLMatcher.grammar_from_lark(lark)


def json_schema_grammar(schema: dict | None) -> str:
    """Grammar for a JSON response: any JSON object when `schema` is None (json_object mode)."""
    return LLMatcher.grammar_from_json_schema(schema if schema is not None else {"type": "object"},
                                              defaults={**JSON_OPTIONS, "lenient": True})


def check_grammar(grammar: str, model=None) -> None:
    """Raise ConfigError with llguidance's message if the grammar (e.g. a user's JSON Schema) is invalid, or, given
    the model, if the engine could not follow it from its first token (see `followable`)."""
    err = LLMatcher.validate_grammar(grammar, lltokenizer(model) if model is not None else None)
    if err and not err.startswith("WARNING"):
        raise ConfigError(f"invalid schema: {err.splitlines()[0]}")
    if model is not None:
        why = followable(grammar, model)
        if why:
            raise ConfigError(f"invalid schema: {why}")


def followable(grammar: str, model) -> str:
    """Why the engine could not generate under `grammar`, or ''. What the engine does first: the first token mask
    and the tokens the grammar forces from there. Why: a grammar llguidance accepts can still fail there, and the
    generation then ended at once with empty content and finish_reason "stop": a pattern like ^(a{1000}){1000}$
    (2 s to build, then "lexer error: too many expressions"), `{"$ref": "#"}` (no token allowed), a required
    property that is the schema itself ("too many items" while forcing `{"x": {"x": ...`). Cached per grammar and
    model, the answer too when it is a refusal: a client repeating a costly schema pays once."""
    key = hashlib.sha256(grammar.encode("utf-8", "surrogatepass")).digest()  # a schema can be megabytes
    with _tok_lock:
        cache = _followable.setdefault(model, {})
        if key in cache:
            return cache[key]
    try:
        constraint = GrammarConstraint(model, grammar)
        matcher = constraint.matcher
        why = ""
        for _ in range(FOLLOWED_STEPS):  # the mask, then the forced tokens taken, as the engine's steps do
            allowed = constraint.allowed()
            forced = constraint.forced()
            if matcher.is_error():
                why = f"the grammar cannot be followed ({matcher.get_error().splitlines()[0][:200]})"
                break
            if not allowed.any() and not matcher.is_accepting():
                why = "no output can satisfy it"
                break
            if not forced or not constraint.consume_valid_prefix(forced):
                break
        if not why and matcher.is_error():
            why = f"the grammar cannot be followed ({matcher.get_error().splitlines()[0][:200]})"
    except ConfigError as exc:
        why = f"the grammar cannot be followed ({str(exc).partition(': ')[2][:200]})"
    with _tok_lock:
        if len(cache) >= FOLLOWABLE_CACHE:
            cache.pop(next(iter(cache)))
        cache[key] = why
    return why


FOLLOWED_STEPS = 4  # rounds of (mask, forced tokens) tried: the failures above show in the first two
FOLLOWABLE_CACHE = 256  # grammars per model: a server sees the same few tool sets again and again
_followable: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


# Wrap-up preferences (GrammarConstraint.closing_allowed), by where the generation stands: inside a string, the
# tokens that end it; outside, ending the generation (rather than starting another parallel call) and closing
# arrays and objects, then a comma that ends a number and moves on to the next required key.
WRAP_UP = 96  # tokens before max_tokens where a tool call starts wrapping up: room for a fresh call's required keys
_END_STRING = ('"', '"}', '"}}', '"}}}', '"]', '"]}', '"}]')
_CLOSE = (']', ']}', ']}}', ']]', '}', '}}', '}}}', '}]')
_NEXT = (',', ', ')
_closing: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def closing_masks(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vocabulary masks (cached per Model object): tokens that end a string; end-of-generation tokens and tokens
    that close arrays and objects; commas."""
    with _tok_lock:
        masks = _closing.get(model)
        if masks is None:
            masks = tuple(np.zeros(model.n_vocab, dtype=bool) for _ in range(3))
            for mask, texts in zip(masks, (_END_STRING, _CLOSE, _NEXT)):
                for text in texts:
                    toks = model.tokenize(text, add_special=False, parse_special=False)
                    if len(toks) == 1:
                        mask[toks[0]] = True
            masks[1][sorted(model.eog_tokens)] = True
            _closing[model] = masks
        return masks


def _scan(state: tuple[bool, bool], data: bytes) -> tuple[bool, bool]:
    """(inside a JSON string, after a backslash there) once `data` follows `state`."""
    in_str, esc = state
    for b in data:
        if esc:
            esc = False
        elif in_str and b == 0x5C:  # backslash
            esc = True
        elif b == 0x22:  # quote
            in_str = not in_str
    return in_str, esc


class GrammarConstraint(Constraint):
    """The engine's Constraint over an llguidance matcher. consume() never puts the matcher in its sticky
    error state: tokens are validated first."""

    def __init__(self, model, grammar: str, tools: list[dict] | None = None):
        self.model = model
        self.tools = tools  # the tools a call grammar allows, for drafters that guess which one (None: not known)
        self.matcher = LLMatcher(lltokenizer(model), grammar, log_level=0)
        if self.matcher.is_error():
            raise ConfigError(f"invalid grammar: {self.matcher.get_error().splitlines()[0]}")
        self.n_vocab = model.n_vocab
        self._words = np.zeros((self.n_vocab + 31) // 32, dtype=np.int32)
        self._dirty = True  # _words is stale
        self.consumed = 0
        self._tokens: list[int] = []  # consumed tokens, for the string state (scanned lazily)
        self._states: list[tuple[bool, bool]] = []  # _scan state after each of the first len(_states) tokens

    def _mask_words(self) -> np.ndarray:
        """llguidance's packed mask for the current state (computed once per state: cheap, ~0.03 ms)."""
        if self._dirty:
            self.matcher.unsafe_compute_mask_ptr(self._words.ctypes.data, self._words.nbytes)
            self._dirty = False
        return self._words

    def allowed(self) -> np.ndarray:
        bits = np.unpackbits(self._mask_words().view(np.uint8), bitorder="little")
        return bits[: self.n_vocab].view(bool)

    def closing_allowed(self) -> np.ndarray:
        """The allowed tokens that bring the call closest to its end: in a string, those that end it; outside,
        ending the generation or closing an array or object, else a comma; all allowed tokens if none is."""
        allowed = self.allowed()
        end_string, close, comma = closing_masks(self.model)
        for tier in ((end_string,) if self.in_string() else (close, comma)):
            both = allowed & tier
            if both.any():
                return both
        return allowed

    def in_string(self) -> bool:
        """Whether the output so far ends inside a JSON string (scanned only when asked: wrap-up, closer guesses)."""
        states = self._states
        state = states[-1] if states else (False, False)
        for t in self._tokens[len(states):]:
            state = _scan(state, self.model.token_bytes(t))
            states.append(state)
        return state[0]

    def is_allowed(self, token: int) -> bool:
        # The mask, not validate_tokens: the mask also rules out non-canonical tokenisations (" {" before '"').
        if self.matcher.is_stopped():
            return False
        return bool((int(self._mask_words()[token >> 5]) >> (token & 31)) & 1)

    def valid_prefix(self, tokens: Sequence[int]) -> int:
        return self.matcher.validate_tokens(list(tokens)) if len(tokens) else 0

    def consume(self, token: int) -> bool:
        m = self.matcher
        if m.is_stopped() or m.validate_tokens([token]) != 1:
            return False
        ok = m.consume_token(token)
        if ok:
            self.consumed += 1
            self._dirty = True
            self._tokens.append(token)
        return ok

    def consume_valid_prefix(self, tokens: Sequence[int]) -> int:
        tokens = list(tokens)
        if not tokens or self.matcher.is_stopped():
            return 0
        n = self.matcher.validate_tokens(tokens)
        if n and self.matcher.consume_tokens(tokens[:n]):
            self.consumed += n
            self._dirty = True
            self._tokens.extend(tokens[:n])
            return n
        return 0

    def rollback(self, n: int) -> None:
        if n > 0:
            self.matcher.rollback(n)
            self.consumed -= n
            self._dirty = True
            del self._tokens[-n:]
            del self._states[len(self._tokens):]

    def forced(self) -> list[int]:
        if self.matcher.is_stopped():
            return []
        return list(self.matcher.compute_ff_tokens())

    def forced_bytes(self) -> bytes:
        return self.matcher.compute_ff_bytes()

    def done(self) -> bool:
        return self.matcher.is_stopped()

    def accepting(self) -> bool:
        return self.matcher.is_accepting()

    def reset(self) -> None:
        self.matcher.reset()
        self.consumed = 0
        self._dirty = True
        self._tokens = []
        self._states = []
