"""Representative chat templates for tests, condensed from the real ones (same markers and logic,
shortened prose): Qwen2.5-Instruct (Hermes <tool_call>), Llama 3.1-Instruct (JSON + ipython),
and a Gemma-style template that rejects system turns and non-alternating roles."""

QWEN25_STYLE = r"""
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}{%- else %}{{- 'You are Qwen, a helpful assistant.' }}{%- endif %}
    {{- "\n\n# Tools\n\nFunction signatures are inside <tools></tools>:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}{{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each call return <tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\nYou are Qwen, a helpful assistant.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}{{- '\n' + message.content }}{%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}{{- tool_call.arguments | tojson }}{{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.index0 == 0 or messages[loop.index0 - 1].role != "tool" %}{{- '<|im_start|>user' }}{%- endif %}
        {{- '\n<tool_response>\n' }}{{- message.content }}{{- '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != "tool" %}{{- '<|im_end|>\n' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
"""

LLAMA31_STYLE = r"""
{{- bos_token }}
{%- if custom_tools is defined %}{%- set tools = custom_tools %}{%- endif %}
{%- if not tools_in_user_message is defined %}{%- set tools_in_user_message = true %}{%- endif %}
{%- if not date_string is defined %}{%- set date_string = strftime_now("%d %b %Y") %}{%- endif %}
{%- if not tools is defined %}{%- set tools = none %}{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}{{- "Environment: ipython\n" }}{%- endif %}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}{{- "<|eot_id|>" }}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\n\n' }}
    {%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\n\n" }}{%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}{%- if not loop.last %}{{- ", " }}{%- endif %}
            {%- endfor %}
            {{- ")" }}
        {%- else %}
            {{- '{"name": "' + tool_call.name + '", ' }}{{- '"parameters": ' }}{{- tool_call.arguments | tojson }}{{- "}" }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping %}{{- message.content | tojson }}{%- else %}{{- message.content }}{%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}
"""

# Like Gemma 2: no system role, strict user/model alternation, no tool support at all.
STRICT_NO_SYSTEM = r"""
{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}{{- raise_exception('System role not supported') }}{%- endif %}
{%- for message in messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}
    {{- '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<start_of_turn>model\n' }}{%- endif %}
"""

import json
import re

import pytest
from gguf import GGUFReader

from localspec.errors import ConfigError
from localspec.prompting import CHATML_TEMPLATE, detect_format, prepare_messages, render_chat, template_caps

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {"name": "get_time", "description": "Local time", "parameters": {"type": "object", "properties": {}}}

# One tool round in OpenAI form: arguments arrive as a JSON string, content None.
TOOL_ROUND = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
]

PARALLEL_ROUND = [
    {"role": "user", "content": "Weather in Paris and the time?"},
    {
        "role": "assistant",
        "content": "Checking both.",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"id": "b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "a", "content": "18C"},
    {"role": "tool", "tool_call_id": "b", "content": "14:02"},
]


def _gguf_template(path) -> str | None:
    field = GGUFReader(path).fields.get("tokenizer.chat_template")
    return None if field is None else field.contents()


@pytest.fixture(scope="module")
def smollm2_template(smollm2) -> str:  # the real model's file (so its tests are slow: tests/conftest.py)
    template = _gguf_template(str(smollm2))
    assert template and "<|im_start|>" in template
    return template


# --- SmolLM2: real template from the GGUF, no tool support -------------------------------------


def test_smollm2_plain_chat_matches_chatml_with_default_system(smollm2_template):
    out = render_chat(smollm2_template, [{"role": "user", "content": "Hi"}])
    assert out == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert not render_chat(smollm2_template, [{"role": "user", "content": "Hi"}], add_generation_prompt=False).endswith(
        "assistant\n"
    )


def test_smollm2_with_tools_gets_generic_convention_in_system_prompt(smollm2_template):
    assert template_caps(smollm2_template).tools is False
    assert detect_format(smollm2_template).name == "generic"
    out = render_chat(smollm2_template, [{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER, TIME])
    system = out.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\n# Tools")
    assert '"name": "get_weather"' in system and '"name": "get_time"' in system  # bare tool wrapped too
    assert "<tool_call>" in system and "</tool_call>" in system
    assert "SmolLM" not in out  # our system turn replaces the template's default one


def test_smollm2_tool_round_becomes_plain_turns(smollm2_template):
    out = render_chat(smollm2_template, TOOL_ROUND, tools=[WEATHER])
    turns = re.findall(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>", out, re.S)
    assert [r for r, _ in turns] == ["system", "user", "assistant", "user"]
    assert turns[0][1].startswith("Be brief.\n\n# Tools")
    assert turns[2][1] == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert turns[3][1] == "<tool_response>\n18C, sunny\n</tool_response>"
    assert "<|im_start|>tool" not in out and out.endswith("<|im_start|>assistant\n")


def test_tool_history_without_tools_still_renders(smollm2_template):
    # The conversation has tool turns but this request offers no tools: still plain text turns.
    out = render_chat(smollm2_template, TOOL_ROUND)
    assert "# Tools" not in out
    assert "<tool_response>\n18C, sunny\n</tool_response>" in out


# --- Qwen2.5 style: native tools, Hermes <tool_call> ---------------------------------------------


def test_qwen_style_native_tools():
    caps = template_caps(QWEN25_STYLE)
    assert caps.tools and caps.tool_calls and caps.tool_role
    assert detect_format(QWEN25_STYLE).name == "hermes"
    out = render_chat(QWEN25_STYLE, TOOL_ROUND, tools=[WEATHER])
    assert out.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert "\n" + json.dumps(WEATHER) + "\n</tools>" in out  # HF tojson: plain json.dumps
    # arguments given as a JSON string are passed to the template as an object (not double-encoded)
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>' in out
    assert "<|im_start|>user\n<tool_response>\n18C, sunny\n</tool_response><|im_end|>\n" in out
    assert "# Tools" not in out.split("<|im_end|>", 1)[1]  # nothing injected by us


def test_qwen_style_parallel_calls_and_results():
    out = render_chat(QWEN25_STYLE, PARALLEL_ROUND, tools=[WEATHER, TIME])
    assert "<|im_start|>assistant\nChecking both.\n<tool_call>" in out
    assert out.count('<tool_call>\n{"name": "') == 2 and out.count("<tool_response>") == 2
    assert out.count("<|im_start|>user") == 2  # both results share one user turn, as the template wants


def test_prepare_messages_passes_native_tools_through():
    msgs, tools = prepare_messages(QWEN25_STYLE, TOOL_ROUND, [TIME])
    assert tools == [{"type": "function", "function": TIME}]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool"]
    assert msgs[2]["content"] == "" and msgs[2]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assert TOOL_ROUND[2]["content"] is None  # the caller's messages are not modified


def test_prepare_messages_without_tool_support():
    msgs, tools = prepare_messages(CHATML_TEMPLATE, PARALLEL_ROUND + [{"role": "user", "content": "Thanks"}], [WEATHER])
    assert tools is None
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2]["content"].startswith("Checking both.\n<tool_call>\n")
    assert msgs[2]["content"].count("<tool_call>") == 2
    # consecutive results and the following user turn merge, keeping user/assistant alternation
    assert msgs[3]["content"] == (
        "<tool_response>\n18C\n</tool_response>\n<tool_response>\n14:02\n</tool_response>\n\nThanks"
    )


# --- Llama 3.1 style: JSON calls, ipython role, one call per turn -------------------------------


def test_llama31_style_tools_in_first_user_message():
    assert detect_format(LLAMA31_STYLE).name == "llama3_json"
    assert template_caps(LLAMA31_STYLE).tools
    out = render_chat(LLAMA31_STYLE, TOOL_ROUND, tools=[WEATHER], bos_token="<|begin_of_text|>", date_string="1 Jan 2025")
    assert out.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n")
    assert "Today Date: 1 Jan 2025\n\nBe brief.<|eot_id|>" in out
    assert json.dumps(WEATHER, indent=4) in out  # tojson(indent=4)
    assert '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>' in out
    assert "<|start_header_id|>ipython<|end_header_id|>\n\n18C, sunny<|eot_id|>" in out


def test_llama31_style_strftime_now_gives_today():
    out = render_chat(LLAMA31_STYLE, [{"role": "user", "content": "hi"}])
    assert re.search(r"Today Date: \d\d \w{3} \d{4}\n", out)


def test_llama31_style_parallel_calls_are_split_into_single_call_turns():
    out = render_chat(LLAMA31_STYLE, PARALLEL_ROUND, tools=[WEATHER, TIME])
    turns = re.findall(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>", out, re.S)
    assert [(role, text[:22]) for role, text in turns[2:]] == [
        ("assistant", '{"name": "get_weather"'),
        ("ipython", "18C"),
        ("assistant", '{"name": "get_time", "'),
        ("ipython", "14:02"),
    ]


# --- templates that refuse things ----------------------------------------------------------------


def test_system_turn_folded_when_template_rejects_it():
    out = render_chat(STRICT_NO_SYSTEM, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    assert out == "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"


def test_strict_alternation_template_with_tool_round():
    out = render_chat(STRICT_NO_SYSTEM, PARALLEL_ROUND + [{"role": "user", "content": "Thanks"}], tools=[WEATHER])
    roles = re.findall(r"<start_of_turn>(\w+)\n", out)
    assert roles == ["user", "model", "user", "model"]
    assert out.startswith("<start_of_turn>user\n# Tools")  # injected system prompt folded into the user turn


def test_template_refusal_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="rejected the conversation: Conversation roles must alternate") as exc:
        render_chat(STRICT_NO_SYSTEM, [{"role": "assistant", "content": "Hi"}])
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "template, match",
    [
        ("{% for m in messages %}{{ m.content }}", r"syntax error \(line 1\)"),
        ("{{ messages[0].content | no_such_filter }}", r"syntax error.*no_such_filter"),
        ("{{ raise_exception('nope:\nbad') }}", r"rejected the conversation: nope: bad$"),
        ("{{ messages[5].content.upper() }}", r"failed to render: UndefinedError"),
        ("{{ ''.__class__.__mro__ }}", r"unsafe operation"),
        ("{% set x = [] %}{{ x.append(1) }}", r"unsafe operation"),
    ],
)
def test_broken_templates_raise_config_error(template, match):
    with pytest.raises(ConfigError, match=match) as exc:
        render_chat(template, [{"role": "user", "content": "hi"}])
    assert "\n" not in str(exc.value)


# --- HF environment details -----------------------------------------------------------------------


def test_tojson_matches_hf():
    t = "{{ messages[0] | tojson }}|{{ messages[0] | tojson(indent=2) }}|{{ messages[0] | tojson(separators=(',', ':')) }}"
    msg = {"role": "user", "content": "café <b>&"}
    out = render_chat(t, [msg], add_generation_prompt=False)
    a, b, c = out.split("|")
    assert a == '{"role": "user", "content": "café <b>&"}'  # no \u escapes, no HTML escaping
    assert b == json.dumps(msg, indent=2, ensure_ascii=False)
    assert c == '{"role":"user","content":"café <b>&"}'


def test_trim_blocks_loopcontrols_generation_tag_and_extra_kwargs():
    t = (
        "{% for m in messages %}\n"
        "{% if loop.index > 1 %}{% break %}{% endif %}\n"
        "{% generation %}{{ m.content }}{% endgeneration %}\n"
        "{% endfor %}\n"
        "{{ flavour }}"
    )
    out = render_chat(t, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], flavour="x")
    assert out == "ax"


def test_multipart_content_is_flattened_to_text():
    msgs = [{"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]}]
    assert "<|im_start|>user\nHello there<|im_end|>" in render_chat(None, msgs)


# --- no template in the GGUF: its family's (real file; prompting/families.py) ------------------------


@pytest.mark.slow
def test_gguf_without_template_gets_its_familys(gemma):
    from localspec.prompting.prompt import render_prompt, tool_format
    from localspec.prompting.template_file import apply_chat_template
    from localspec.runtime.model import Model, ModelSettings

    model = Model(gemma, ModelSettings(vocab_only=True))
    assert model.chat_template is None  # the base Gemma-3-270M ships without a chat template
    assert "using the gemma family's (architecture gemma3, <start_of_turn> <end_of_turn> tokens)" in \
        apply_chat_template(model, None)
    out = render_prompt(model, TOOL_ROUND, [WEATHER])
    assert out.startswith("<bos><start_of_turn>user\nBe brief.\n\n# Tools") and "<|im_start|>" not in out
    assert "```tool_code\nget_weather(" in out and out.endswith("<start_of_turn>model\n")
    assert tool_format(model).name == "gemma_tool_code"


@pytest.mark.parametrize("template", [QWEN25_STYLE, LLAMA31_STYLE], ids=["qwen", "llama"])
def test_native_template_renders_past_calls_exactly_like_render_call(template):
    # The model sees its earlier calls in the same spelling the detected format renders and parses.
    from localspec.prompting import ToolCall

    fmt = detect_format(template)
    call = ToolCall("get_weather", {"city": "Zürich", "days": 2})
    history = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    out = render_chat(template, history, tools=[WEATHER], add_generation_prompt=False)
    rendered = fmt.render_call(call.name, call.arguments)
    assert rendered in out
    assert fmt.parse(rendered).calls == [call]


def test_llama31_style_builtin_tool_call_uses_python_tag():
    history = [
        {"role": "user", "content": "Search it"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "brave_search", "arguments": {"query": "paris"}}}]},
        {"role": "ipython", "content": {"results": ["x"]}},
    ]
    out = render_chat(LLAMA31_STYLE, history, builtin_tools=["brave_search"], add_generation_prompt=False)
    assert '<|python_tag|>brave_search.call(query="paris")<|eot_id|>' in out
    assert "<|start_header_id|>ipython<|end_header_id|>\n\n" + '{"results": ["x"]}<|eot_id|>' in out
    calls = detect_format(LLAMA31_STYLE).parse('<|python_tag|>brave_search.call(query="paris")').calls
    assert [(c.name, c.arguments) for c in calls] == [("brave_search", {"query": "paris"})]
