"""A GGUF without a chat template gets its family's (prompting/families.py): told apart by its architecture and
special tokens, rendered as the family's real template renders, with the family's tool-call format; a family name
is accepted wherever a template file is; an unknown family says what it fell back to.

Files: tests/template_gguf.py writes each format's vocabulary (its markers as special tokens) with and without the
real template, under the architecture a real file of that family declares (loaded vocabulary-only)."""

from __future__ import annotations

import ctypes

import pytest

from localspec.errors import ConfigError
from localspec.prompting import families
from localspec.prompting.formats import detect_format
from localspec.prompting.prompt import render_prompt, tool_format
from localspec.prompting.template_file import apply_chat_template, choose_template, template_source
from localspec.runtime.model import Model, ModelSettings
from tests.template_gguf import FORMATS, Format, write_format_gguf

VOCAB_ONLY = ModelSettings(vocab_only=True)
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
# A whole tool round: system, user, the assistant's call, the tool's result, the next user turn.
ROUND = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "18 C, sunny"},
    {"role": "user", "content": "And in Rome?"},
]

# The catalog's families (models.toml: Qwen3, Qwen2.5, Llama 3.1/3.2, Gemma 3) and the demo model's (SmolLM2: llama
# architecture, ChatML markers), each as a file of that family declares itself: (test format, architecture, family).
CATALOG = [("qwen3", "qwen3", "qwen3"), ("qwen2.5", "qwen2", "qwen2.5"), ("llama3.1", "llama", "llama3"),
           ("llama3.2", "llama", "llama3"), ("gemma2", "gemma3", "gemma")]


def load(tmp_path, fmt: str, arch: str, *, template: bool) -> Model:
    return Model(write_format_gguf(tmp_path / f"{fmt}-{arch}-{template}.gguf", FORMATS[fmt], template=template,
                                   arch=arch), VOCAB_ONLY)


@pytest.mark.parametrize("fmt, arch, family", CATALOG, ids=[c[0] for c in CATALOG])
def test_a_file_without_a_template_renders_as_its_family(tmp_path, fmt, arch, family):
    bare, real = load(tmp_path, fmt, arch, template=False), load(tmp_path, fmt, "llama", template=True)
    assert bare.chat_template is None
    note = apply_chat_template(bare, None)
    assert note and f"using the {family} family's" in note and f"architecture {arch}" in note
    text, choice = choose_template(real)
    assert text is None and choice.source == "file"
    if family == "gemma":
        # Gemma 3's template is Gemma 2's with the system turn folded into the first user turn, as the project
        # renders every template that rejects a system turn; its tool calls are Google's ```tool_code``` blocks.
        assert tool_format(bare).name == "gemma_tool_code"
    else:
        assert tool_format(bare).name == detect_format(real.chat_template).name != "generic"
    # (Llama 3.2's template dates its system turn today, 3.1's (the llama3 family's) on a fixed day: one date.)
    day = {"date_string": "26 Jul 2024"}
    for tools in (None, [WEATHER]):
        for messages in (ROUND[:2], ROUND):
            assert render_prompt(bare, messages, tools, template_vars=day) == \
                render_prompt(real, messages, tools, template_vars=day)
    # The format's calls round-trip through what the family's template renders of them.
    fmt_ = tool_format(bare)
    rendered = fmt_.render_call("get_weather", {"city": "Paris"})
    assert fmt_.parse(rendered).calls[0].arguments == {"city": "Paris"}
    if family != "gemma":  # (the injected convention: calls are rendered by the format, so they appear as is)
        assert rendered.strip() in render_prompt(bare, ROUND, [WEATHER])


def llama_cpp_builtin(name: str, messages: list[dict]) -> str:
    """What llama.cpp's own built-in template `name` renders (llama_chat_apply_template)."""
    from localspec.runtime.llama import lib

    keep = [(m["role"].encode(), m["content"].encode()) for m in messages]
    arr = (lib.llama_chat_message * len(keep))(*[lib.llama_chat_message(r, c) for r, c in keep])
    buf = ctypes.create_string_buffer(1 << 14)
    n = lib.llama_chat_apply_template(name.encode(), arr, len(keep), True, buf, len(buf))
    assert 0 < n < len(buf)
    return buf.raw[:n].decode()


@pytest.mark.parametrize("fmt, arch, family", [("gemma2", "gemma3", "gemma"), ("qwen2.5", "llama", "chatml")])
def test_families_render_as_llama_cpp_builtin_does(tmp_path, fmt, arch, family):
    """Gemma's system turn is folded as Gemma 3's template and llama.cpp's built-in `gemma` fold it."""
    bare = load(tmp_path, fmt, arch, template=False)
    apply_chat_template(bare, None)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}]
    ours = render_prompt(bare, messages).removeprefix(bare.token_bytes(bare.bos).decode())
    assert ours == llama_cpp_builtin(family, messages)


def test_llama_cpp_knows_the_families_it_names():
    from localspec.runtime.llama import lib

    n = lib.llama_chat_builtin_templates(None, 0)
    arr = (ctypes.c_char_p * n)()
    lib.llama_chat_builtin_templates(arr, n)
    builtin = {x.decode() for x in arr}
    ours = {f.name for f in families.FAMILIES}
    # qwen2.5, qwen3 and gemma4 are model families with templates of their own; llama.cpp renders the first two
    # as chatml and does not know the last.
    assert ours - builtin == {"qwen2.5", "qwen3", "gemma4"}


def test_an_unknown_family_says_what_it_fell_back_to(tmp_path):
    plain = Format("google-gemma-2-2b-it.jinja", ())  # a vocabulary with no turn markers at all
    bare = Model(write_format_gguf(tmp_path / "plain.gguf", plain, template=False, arch="llama"), VOCAB_ONLY)
    assert choose_template(bare)[1].describe().startswith("ChatML fallback (the file has none and its family is")
    note = apply_chat_template(bare, None)
    assert note and "family is unknown (architecture llama, no known turn markers)" in note
    assert "using the ChatML fallback" in note and "--chat-template FAMILY|FILE" in note
    assert bare.chat_template == families.CHATML.template


def test_a_family_name_is_taken_where_a_file_is(tmp_path, monkeypatch):
    model = load(tmp_path, "qwen2.5", "qwen2", template=True)
    assert apply_chat_template(model, "gemma") is None
    assert model.chat_template == families.BY_NAME["gemma"].template
    assert template_source("llama3") == (families.BY_NAME["llama3"].template, "llama3")
    with pytest.raises(ConfigError, match=r"'gemma3': no such file, and no family of that name \(families: .*gemma"):
        template_source("gemma3")
    with pytest.raises(ConfigError, match="file not found"):
        template_source(str(tmp_path / "missing.jinja"))
    # A file of a family's name in the working folder is the file.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chatml").write_text("{{ messages[0]['content'] }}")
    assert template_source("chatml") == ("{{ messages[0]['content'] }}", None)
