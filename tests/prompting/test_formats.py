"""Tool-call formats: detection from template text, parsing (incl. malformed/truncated output),
render_call/parse round trips, and the trigger/prefix/suffix contract the engine relies on."""

import random

import pytest

from localspec.errors import ConfigError
from localspec.prompting import ToolCall, detect_format, get_format
from localspec.prompting.formats import FORMATS


def fmt(name):
    return FORMATS[name]


# --- detection -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template, expected",
    [
        (None, "generic"),
        ("", "generic"),
        ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}", "generic"),
        ("{{- '<start_function_call>call:' + tool_call['name'] + '{' -}}", "functiongemma"),
        ("{{- '<|tool_call>call:' + function['name'] + '{' -}}", "gemma4"),
        ('{{- "[TOOL_CALLS] [" }}{%- for tool_call in tool_calls %}', "mistral"),
        ("{{- '[TOOL_CALLS]' + tool.function.name + '[ARGS]' + arguments }}", "mistral_args"),
        ("{{- '\\n<tool_call>\\n{\"name\": \"' }}", "hermes"),
        ('{{- "<|python_tag|>" + tool_call.name + ".call(" }}', "llama3_json"),
        ('<|start_header_id|>{{ "{\\"name\\": function name, \\"parameters\\": dict}" }}', "llama3_json"),
        ("If you call a function, wrap it in ```tool_code```", "gemma_tool_code"),
    ],
)
def test_detect_format(template, expected):
    assert detect_format(template).name == expected


def test_get_format():
    assert get_format("hermes") is fmt("hermes")
    with pytest.raises(ConfigError, match="unknown tool-call format 'nope'; known: .*hermes"):
        get_format("nope")


# --- the contract every format keeps -------------------------------------------------------------

ARGSETS = [
    {},
    {"city": "Paris"},
    {"path": "src/a b.py", "n": 3, "ratio": 0.5, "force": False, "missing": None},
    {"text": 'He said "hi",\nthen {left} [x], done: yes', "emoji": "café ☕ 東京"},
    {"opts": {"unit": "c", "flags": [True, 2, "x"], "deep": {"k": []}}, "items": [1, {"a": "b"}]},
]


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("args", ARGSETS, ids=range(len(ARGSETS)))
def test_render_call_parse_round_trip(name, args):
    f = fmt(name)
    text = f.render_call("do_thing", args)
    assert text == f.call_prefix + f.render_body("do_thing", args) + f.call_suffix
    assert text.startswith(f.trigger) and f.trigger == f.triggers[0]
    result = f.parse(text)
    assert result.calls == [ToolCall("do_thing", args)], result.errors
    assert result.errors == [] and result.content == ""


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_several_calls_with_content_around(name):
    f = fmt(name)
    text = "Let me check.\n" + f.render_call("a", {"x": 1}) + "\n" + f.render_call("b", {"y": "z"}) + "\nOne moment."
    result = f.parse(text)
    assert result.calls == [ToolCall("a", {"x": 1}), ToolCall("b", {"y": "z"})]
    assert result.content == "Let me check.\nOne moment."
    assert result.errors == []


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_truncation_is_reported_never_raised(name):
    f = fmt(name)
    first, second = f.render_call("get_weather", {"city": "Paris", "days": 2}), f.render_call("get_time", {})
    text = "Sure.\n" + first + second
    for cut in range(len(text) + 1):
        prefix = text[:cut]
        result = f.parse(prefix)
        started = prefix.count(f.trigger)
        assert started - 1 <= len(result.calls) + len(result.errors) <= started, prefix
        assert all(c in (ToolCall("get_weather", {"city": "Paris", "days": 2}), ToolCall("get_time", {})) for c in result.calls)
        if not result.calls:
            assert result.content == prefix.strip()  # nothing the model wrote is lost
    assert f.parse(text).calls == [ToolCall("get_weather", {"city": "Paris", "days": 2}), ToolCall("get_time", {})]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_random_garbage_never_raises(name):
    f = fmt(name)
    rng = random.Random(1234)
    alphabet = list('{}[]":,<>\\ \nabc123') + list(f.triggers) + [f.call_suffix, "call:", "[ARGS]", "<escape>", "```"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        result = f.parse(text)
        assert isinstance(result.content, str) and isinstance(result.calls, list) and isinstance(result.errors, list)


def test_plain_text_has_no_calls():
    for f in FORMATS.values():
        assert f.parse("  The answer is 42.  ").content == "The answer is 42."
        assert f.parse("").calls == []


# --- Hermes / Qwen / generic --------------------------------------------------------------------


def test_hermes_arguments_as_json_string_and_parameters_key():
    r = fmt("hermes").parse(
        '<tool_call>\n{"name": "a", "arguments": "{\\"x\\": 1}"}\n</tool_call>'
        '<tool_call>{"name": "b", "parameters": {"y": 2}}</tool_call>'
    )
    assert r.calls == [ToolCall("a", {"x": 1}), ToolCall("b", {"y": 2})] and r.errors == []


def test_hermes_malformed_block_kept_as_content_while_good_one_parses():
    bad = '<tool_call>\n{"name": "a", "arguments": {"x": 1,}}\n</tool_call>'
    good = '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>'
    r = fmt("hermes").parse(f"Hi {bad} {good}")
    assert r.calls == [ToolCall("b", {})]
    assert r.content == f"Hi {bad}"
    assert len(r.errors) == 1 and "invalid JSON" in r.errors[0]


def test_hermes_truncated_call():
    text = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"ci'
    r = fmt("generic").parse(text)
    assert r.calls == [] and r.content == text
    assert r.errors == [r.errors[0]] and "truncated" in r.errors[0] and r.errors[0].startswith("generic:")


def test_hermes_missing_close_tag_is_accepted():
    # Engines often use </tool_call> as a stop string, so it may be absent.
    r = fmt("hermes").parse('<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n')
    assert r.calls == [ToolCall("a", {"x": 1})] and r.errors == []


@pytest.mark.parametrize(
    "body, message",
    [
        ('{"arguments": {}}', 'no "name"'),
        ('{"name": "a", "arguments": [1, 2]}', "must be a JSON object, got list"),
        ('{"name": "a", "arguments": "{not json"}', "arguments string is not valid JSON"),
        ('{"name": "a", "arguments": {}} trailing', "unexpected text after the JSON"),
        ('"just a string"', "must be a JSON object"),
    ],
)
def test_hermes_semantic_errors(body, message):
    r = fmt("hermes").parse(f"<tool_call>{body}</tool_call>")
    assert r.calls == [] and len(r.errors) == 1 and message in r.errors[0]
    assert r.content == f"<tool_call>{body}</tool_call>"


def test_hermes_prefix_and_suffix():
    f = fmt("hermes")
    assert (f.call_prefix, f.call_suffix, f.trigger) == ("<tool_call>\n", "\n</tool_call>", "<tool_call>")
    assert f.render_call("a", {"x": "é"}) == '<tool_call>\n{"name": "a", "arguments": {"x": "é"}}\n</tool_call>'


# --- Llama 3.x --------------------------------------------------------------------------------------


def test_llama3_bare_json_call():
    r = fmt("llama3_json").parse('{"name": "get_weather", "parameters": {"city": "Paris"}}')
    assert r.calls == [ToolCall("get_weather", {"city": "Paris"})] and r.content == "" and r.errors == []


def test_llama3_python_tag_json_and_builtin_call():
    f = fmt("llama3_json")
    r = f.parse('<|python_tag|>{"name": "a", "parameters": "{\\"k\\": true}"}')
    assert r.calls == [ToolCall("a", {"k": True})]
    r = f.parse('Searching.\n<|python_tag|>brave_search.call(query="weather in paris")')
    assert r.calls == [ToolCall("brave_search", {"query": "weather in paris"})] and r.content == "Searching."


def test_llama3_semicolon_separated_calls():
    r = fmt("llama3_json").parse('{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": 1}}')
    assert r.calls == [ToolCall("a", {}), ToolCall("b", {"x": 1})] and r.content == ""


def test_llama3_ordinary_json_is_content_not_a_call():
    text = 'Here you go: {"name": "Bob", "age": 3}'
    r = fmt("llama3_json").parse(text)
    assert r.calls == [] and r.errors == [] and r.content == text


def test_llama3_truncated_and_malformed():
    f = fmt("llama3_json")
    text = '{"name": "get_weather", "parameters": {"city": "Par'
    r = f.parse(text)
    assert r.calls == [] and r.content == text and "truncated" in r.errors[0]
    r = f.parse('<|python_tag|>brave_search.call(query=)\n{"name": "ok", "parameters": {}}')
    assert r.calls == [ToolCall("ok", {})] and len(r.errors) == 1 and "built-in" in r.errors[0]
    assert r.content == "<|python_tag|>brave_search.call(query=)"


# --- Mistral ---------------------------------------------------------------------------------------


def test_mistral_json_list_with_ids_and_string_arguments():
    r = fmt("mistral").parse(
        'On it. [TOOL_CALLS] [{"name": "a", "arguments": {"x": 1}, "id": "abc123xyz"}, {"name": "b", "arguments": "{}"}]'
    )
    assert r.calls == [ToolCall("a", {"x": 1}), ToolCall("b", {})] and r.content == "On it." and r.errors == []


def test_mistral_truncated():
    text = '[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "argu'
    r = fmt("mistral").parse(text)
    assert r.calls == [] and r.content == text and "truncated" in r.errors[0]


def test_mistral_args_format():
    f = fmt("mistral_args")
    r = f.parse('Sure[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}')
    assert r.calls == [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {})] and r.content == "Sure"
    r = f.parse('[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Oslo"}')
    assert r.calls == [ToolCall("get_weather", {"city": "Oslo"})]
    r = f.parse('[TOOL_CALLS][{"name": "old", "arguments": {}}]')  # the older list form is still understood
    assert r.calls == [ToolCall("old", {})]


def test_mistral_args_malformed_and_truncated():
    f = fmt("mistral_args")
    r = f.parse('[TOOL_CALLS]get_weather{"city": "Paris"}[TOOL_CALLS]ok[ARGS]{}')
    assert r.calls == [ToolCall("ok", {})] and "expected name[ARGS]" in r.errors[0]
    assert r.content == '[TOOL_CALLS]get_weather{"city": "Paris"}'
    r = f.parse('[TOOL_CALLS]get_weather[ARGS]{"city": "Pa')
    assert r.calls == [] and "truncated" in r.errors[0]
    r = f.parse("[TOOL_CALLS]get_weather[ARGS][1]")
    assert r.calls == [] and "must be a JSON object" in r.errors[0]


# --- FunctionGemma / Gemma 4 ----------------------------------------------------------------------


def test_functiongemma_documented_examples():
    f = fmt("functiongemma")
    r = f.parse(
        "<start_function_call>call:get_current_weather{location:<escape>Tokyo, Japan<escape>,"
        "unit:<escape>celsius<escape>}<end_function_call>"
    )
    assert r.calls == [ToolCall("get_current_weather", {"location": "Tokyo, Japan", "unit": "celsius"})]
    r = f.parse(
        "<start_function_call>\ncall:turn_on_flashlight{}\n<end_function_call>\n"
        "<start_function_call>\ncall:create_calendar_event{datetime:<escape>2026-11-20T10:00:00<escape>, "
        "title:<escape>Review Q4 Strategy Draft<escape>}\n<end_function_call>"
    )
    assert r.calls == [
        ToolCall("turn_on_flashlight", {}),
        ToolCall("create_calendar_event", {"datetime": "2026-11-20T10:00:00", "title": "Review Q4 Strategy Draft"}),
    ]
    assert r.content == "" and r.errors == []


def test_functiongemma_values_and_missing_end_token():
    r = fmt("functiongemma").parse(
        'Ok <start_function_call>call:f{n:-2.5,ok:true,none:null,tags:[<escape>a<escape>,3],o:{k:"json str"},w:bare}'
    )
    assert r.calls == [ToolCall("f", {"n": -2.5, "ok": True, "none": None, "tags": ["a", 3], "o": {"k": "json str"}, "w": "bare"})]
    assert r.content == "Ok" and r.errors == []


def test_functiongemma_malformed_and_truncated():
    f = fmt("functiongemma")
    r = f.parse("<start_function_call>get_weather{city:<escape>Paris<escape>}<end_function_call>")
    assert r.calls == [] and "expected call:<name>" in r.errors[0]
    text = "<start_function_call>call:f{a:<escape>abc"
    r = f.parse(text)
    assert r.calls == [] and r.content == text and "unterminated <escape> string" in r.errors[0]
    r = f.parse("<start_function_call>call:f{a:1 b:2}<end_function_call>")
    assert r.calls == [] and "bad value '1 b:2'" in r.errors[0]
    r = f.parse("<start_function_call>call:f{a:<escape>x<escape> b:2}<end_function_call>")
    assert r.calls == [] and "expected ',' or '}'" in r.errors[0]


def test_gemma4_call():
    f = fmt("gemma4")
    r = f.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>')
    assert r.calls == [ToolCall("get_weather", {"city": "Paris", "days": 2})]
    assert f.render_call("a", {"s": "x"}) == '<|tool_call>call:a{s:<|"|>x<|"|>}<tool_call|>'
    assert (f.call_prefix, f.call_suffix) == ("<|tool_call>call:", "<tool_call|>")


# --- Gemma 3 tool_code -----------------------------------------------------------------------------


def test_tool_code_forms():
    f = fmt("gemma_tool_code")
    r = f.parse('I will look.\n```tool_code\nget_weather(city="Paris", days=2)\n```')
    assert r.calls == [ToolCall("get_weather", {"city": "Paris", "days": 2})] and r.content == "I will look."
    r = f.parse('```tool_code\n[a(x=1), b(y="z")]\n```')
    assert r.calls == [ToolCall("a", {"x": 1}), ToolCall("b", {"y": "z"})]
    r = f.parse("```tool_code\nprint(f(flag=true, other=null, ok=False))\n```")
    assert r.calls == [ToolCall("f", {"flag": True, "other": None, "ok": False})]
    assert f.render_result("f", "42") == "```tool_output\n42\n```"


@pytest.mark.parametrize(
    "body, message",
    [
        ('get_weather("Paris")', "positional arguments"),
        ('get_weather(city="Paris"', "not closed: truncated"),
        ("x = 1", "only call expressions"),
        ("__import__('os').system('true')", "not a plain name"),
        ("f(a=open('x'))", "malformed node"),
    ],
)
def test_tool_code_errors_and_no_execution(body, message):
    closing = "" if "truncated" in message else "\n```"
    text = f"```tool_code\n{body}{closing}"
    r = fmt("gemma_tool_code").parse(text)
    assert r.calls == [] and r.content == text.strip()
    assert len(r.errors) == 1 and message in r.errors[0]
