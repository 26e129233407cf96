"""ToolChoice: parsed once from what the app, `run --tool-choice` and an OpenAI request write (issue 37.3)."""

from __future__ import annotations

import pytest

from localspec.errors import ConfigError
from localspec.turns import ToolChoice


@pytest.mark.parametrize("written, mode, name, openai", [
    (None, "auto", None, "auto"),
    ("auto", "auto", None, "auto"),
    ("required", "required", None, "required"),
    ("none", "none", None, "none"),
    ("read_file", "required", "read_file", {"type": "function", "function": {"name": "read_file"}}),
    ({"type": "function", "function": {"name": "list_dir"}}, "required", "list_dir",
     {"type": "function", "function": {"name": "list_dir"}}),
])
def test_what_users_and_clients_write(written, mode, name, openai):
    choice = ToolChoice.parse(written)
    assert (choice.mode, choice.name, choice.openai()) == (mode, name, openai)
    assert ToolChoice.parse(choice) is choice  # parsed once: a parsed value passes through
    assert choice.calls == (mode != "none")


@pytest.mark.parametrize("written", ["", 3, {"type": "function"}, {"type": "function", "function": {"name": ""}},
                                     {"function": {"name": 7}}, ["auto"]])
def test_what_is_refused_is_one_line(written):
    with pytest.raises(ConfigError):
        ToolChoice.parse(written)


def test_a_name_goes_only_with_a_required_call():
    with pytest.raises(ValueError):
        ToolChoice("auto", "read_file")
    with pytest.raises(ValueError):
        ToolChoice("sometimes")
