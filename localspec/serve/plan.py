"""Turn a validated request into what the worker runs: prompt tokens, generation parameters and grammars.

Everything that can fail because of the request (template, schema, context size) fails here, in the HTTP
handler, so a bad request is a 400 before it takes a place in the queue.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from localspec.errors import ConfigError
from localspec.prompting import thinking as think
from localspec.prompting.formats import ToolCallFormat
from localspec.prompting.prompt import chat_prompt_tokens
from localspec.serve.api_errors import bad_request
from localspec.serve.satisfiable import never_satisfied
from localspec.serve.schemas import ChatRequest
from localspec.speculative import JSON_OPTIONS, GenParams, check_grammar, json_schema_grammar, tools_schema
from localspec.turns import ToolChoice, TurnRequest
from localspec.turns.calls import call_grammar
from localspec.turns.tool_choice import NONE

# How the output is produced (`mode`, for the log):
#   free  - unconstrained text (no tools, or tool_choice "none")
#   auto  - free text, switching to a constrained call when the model writes the format's trigger
#   calls - the whole output is a constrained call (tool_choice "required" or a named function)
#   json  - the whole output is constrained JSON (response_format), or with tools+auto: JSON or a call
MODES = {"none": "free", "auto": "auto", "required": "calls"}


@dataclass
class Plan:
    prompt: list[int]
    params: GenParams
    fmt: ToolCallFormat
    choice: ToolChoice = ToolChoice(NONE)  # the request's own, parsed once (serve/schemas.py); none: no tools
    grammar: str | None = None  # whole-output grammar (json)
    tools: tuple[dict, ...] = ()
    parallel: bool = False  # parallel_tool_calls: more calls may follow the first
    raw_reasoning: bool = False  # reasoning_format "none": the `<think>` text stays in the content as written

    @property
    def mode(self) -> str:
        return "json" if self.grammar is not None else MODES[self.choice.mode]

    def request(self) -> TurnRequest:
        """The turn this plan runs: the request's max_tokens bounds the whole reply, calls included."""
        return TurnRequest(self.params, self.tools, self.choice, parallel=self.parallel,
                           call_max_tokens=self.params.max_tokens, total_tokens=self.params.max_tokens,
                           grammar=self.grammar)


def _calls_grammar(tools, fmt: ToolCallFormat, parallel: bool) -> str:
    # The agent's call grammar: the call that runs may start after part of the prefix (serve/generate.py), and
    # that grammar is built from the same function.
    return call_grammar(fmt, list(tools), "", parallel=parallel)


def _prefix_rule(model, fmt: ToolCallFormat) -> list[str]:
    """Lark for the call prefix. Where the tokenizer has the trigger as a token of its own (Qwen's `<tool_call>`),
    that token too: a grammar's text never matches a special token, so the model's own way of starting a call
    would be refused."""
    if not fmt.call_prefix:
        return []
    text = json.dumps(fmt.call_prefix)
    trigger = fmt.trigger
    ids = model.tokenize(trigger, add_special=False, parse_special=True) if trigger else []
    if not (trigger and fmt.call_prefix.startswith(trigger) and len(ids) == 1):
        return [text]
    rest = fmt.call_prefix[len(trigger):]
    return [f"(<[{ids[0]}]>{' ' + json.dumps(rest) if rest else ''} | {text})"]


def _answer_or_call_grammar(model, schema: dict | None, tools, fmt: ToolCallFormat) -> str:
    """Lark grammar: a JSON answer under `schema`, or one tool call in the model's format."""
    from llguidance import LLMatcher

    answer = {**(schema if schema is not None else {"type": "object"}), "x-guidance": {**JSON_OPTIONS,
                                                                                       "lenient": True}}
    call = " ".join(_prefix_rule(model, fmt) + ["call"] + ([json.dumps(fmt.call_suffix)] if fmt.call_suffix else []))
    lark = (f"start: answer | calls\nanswer: %json {json.dumps(answer)}\ncalls: {call}\n"
            f"call: %json {json.dumps(tools_schema(list(tools)))}\n")
    return LLMatcher.grammar_from_lark(lark)


# Keywords llguidance cannot enforce but whose breach clients do not notice: pydantic turns `set` fields into
# uniqueItems and parses duplicates into a set anyway.
_TOLERATED = {"uniqueItems"}


def _without(schema, keys: set[str]):
    if isinstance(schema, dict):
        return {k: _without(v, keys) for k, v in schema.items() if k not in keys}
    if isinstance(schema, list):
        return [_without(v, keys) for v in schema]
    return schema


def check_enforceable(schema: dict | None, param: str) -> None:
    """400 for a schema with keywords the grammar would silently ignore ({"not": {}} would allow anything): an
    answer from this server always matches the schema it was given, or there is no answer."""
    from llguidance import LLMatcher

    if schema is None:
        return
    try:
        grammar = LLMatcher.grammar_from_json_schema(_without(schema, _TOLERATED), defaults=JSON_OPTIONS)
        err = LLMatcher.validate_grammar(grammar, None)
    except (ValueError, TypeError, KeyError) as exc:
        err = str(exc)
    if err.startswith("Unimplemented keys"):
        raise bad_request(f"invalid schema: this server cannot enforce the JSON Schema keywords "
                          f"{err.partition(':')[2].strip()}", param, "invalid_schema")
    why = never_satisfied(schema)
    if why:
        raise bad_request(f"invalid schema: {why}", param, "invalid_schema")


MAX_PATTERNS = 64  # string patterns checked one by one per schema; more is refused (each may cost a lexer build)


def check_patterns(schema, model, param: str) -> None:
    """400 for a string `pattern` anywhere in the schema that the engine cannot follow (^(a{1000}){1000}$: llguidance
    gives up with "too many expressions" once the string starts). Checked each on its own, because the whole
    schema's first steps reach only the patterns of properties it requires."""
    patterns: list[str] = []
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str) and node["pattern"] not in patterns:
                patterns.append(node["pattern"])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    if len(patterns) > MAX_PATTERNS:
        raise bad_request(f"invalid schema: more than {MAX_PATTERNS} distinct string patterns", param,
                          "invalid_schema")
    for pattern in patterns:
        _checked(lambda: json_schema_grammar({"type": "string", "pattern": pattern}), model, param)


def _checked(grammar_fn, model, param: str) -> str:
    try:
        grammar = grammar_fn()
        check_grammar(grammar, model)
    except ConfigError as exc:
        raise bad_request(str(exc), param, "invalid_schema") from None
    except (ValueError, TypeError, KeyError) as exc:  # llguidance rejects the schema before validation
        raise bad_request(f"invalid schema: {exc}", param, "invalid_schema") from None
    return grammar


def _prompt(model, req: ChatRequest) -> list[int]:
    template = model.chat_template
    try:
        # Thinking on unless the request says otherwise, as llama-server has it (templates such as DeepSeek-R1's
        # need it said); a reasoning template without the switch gets Qwen3's `/no_think`, as in the agent.
        return chat_prompt_tokens(model, think.no_think(req.messages, template, req.thinking), req.tools or None,
                                  template_vars=think.template_vars(template, req.thinking))
    except ConfigError as exc:  # the chat template refused the conversation
        raise bad_request(str(exc), "messages") from None


def make_plan(model, n_ctx: int, req: ChatRequest, defaults: GenParams, fmt: ToolCallFormat) -> Plan:
    prompt = _prompt(model, req)
    room = n_ctx - len(prompt)
    if room < 1 or (req.max_tokens is not None and req.max_tokens > room):
        asked = f" ({len(prompt)} in the messages, {req.max_tokens} in the completion)" if req.max_tokens else ""
        raise bad_request(f"This model's maximum context length is {n_ctx} tokens. However, you requested "
                          f"{len(prompt) + (req.max_tokens or 0)} tokens{asked}. Please reduce the length of the "
                          "messages or completion.", "messages", "context_length_exceeded")
    sampling = defaults.sampling
    if req.temperature is not None:
        sampling = replace(sampling, temperature=req.temperature)
    if req.top_p is not None:
        sampling = replace(sampling, top_p=req.top_p)
    if req.seed is not None:
        sampling = replace(sampling, seed=req.seed if req.seed >= 0 else None)
    params = replace(defaults, max_tokens=req.max_tokens or min(defaults.max_tokens, room), sampling=sampling,
                     stop=req.stop or defaults.stop)

    tools = tuple(req.tools)
    choice = req.tool_choice
    if choice.name is not None:
        tools = tuple(t for t in tools if t["function"]["name"] == choice.name)
    use_tools = bool(tools) and choice.calls  # with "none" the model still sees them in the prompt
    plan = Plan(prompt, params, fmt, choice if use_tools else ToolChoice(NONE), tools=tools if use_tools else (),
                parallel=req.parallel_tool_calls, raw_reasoning=req.reasoning_format == "none")
    if use_tools:
        for i, t in enumerate(req.tools):
            if t in tools:
                param = f"tools[{i}].function.parameters"
                check_enforceable(t["function"].get("parameters"), param)
                # The call grammar's first steps stop at the choice of tool: each tool's arguments are checked
                # the way the engine will follow them (speculative/grammar.py: followable).
                parameters = t["function"].get("parameters")
                _checked(lambda: json_schema_grammar(parameters), model, param)
                check_patterns(parameters, model, param)
    if req.response_format is not None:
        check_enforceable(req.json_schema, "response_format.json_schema.schema")
        check_patterns(req.json_schema, model, "response_format.json_schema.schema")
        schema = req.json_schema
        if use_tools and choice.mode == "auto":
            plan.grammar = _checked(lambda: _answer_or_call_grammar(model, schema, tools, fmt), model,
                                    "response_format.json_schema.schema")
        elif use_tools:  # a call is required: the response format only applies to answers, and there is none
            # Built here only to refuse a schema llguidance cannot take (the turn engine builds its own).
            _checked(lambda: _calls_grammar(tools, fmt, req.parallel_tool_calls), model, "tools")
            return plan
        else:
            plan.grammar = _checked(lambda: json_schema_grammar(schema), model,
                                    "response_format.json_schema.schema")
    elif use_tools:
        _checked(lambda: _calls_grammar(tools, fmt, req.parallel_tool_calls), model, "tools")
    return plan
