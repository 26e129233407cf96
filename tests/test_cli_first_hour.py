"""What a new user meets on the command line (issue 18): the demo pair, one set of sampling defaults for every
entry point, a chat template for GGUFs without one (and the warning when ChatML stands in), and vocabulary types
named in compatibility errors. Real llama.cpp on real GGUF files."""

from __future__ import annotations

import json

import pytest

from localspec.launch.flags import RunFlags
from localspec.models.selection import DEMO, demo_model_path
from localspec.settings.config_toml import Settings, load_config, set_config_value
from tests.hub_server import run_cli as run

needs_demo = pytest.mark.skipif(demo_model_path() is None, reason="needs the packaged demo model (localspec[demo])")

# A template that renders differently from ChatML, so a test can see which one was used.
PLAIN_TEMPLATE = ("{% for m in messages %}{{ m.role | upper }}: {{ m.content }}\n{% endfor %}"
                  "{% if add_generation_prompt %}ASSISTANT:{% endif %}")


# ---- the demo pair ---------------------------------------------------------------------------------------------

@needs_demo
def test_models_lists_the_demo_pair(home, capsys):
    assert run("models") == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.split()[:1] == [DEMO] or x[2:].startswith(DEMO))
    assert "installed" in line and "SmolLM2" in line
    assert run("models", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["demo"]["name"] == DEMO and data["demo"]["state"] == "installed"
    # Nothing else installed: the demo is what runs, so it is the default shown (issue 28), not a missing pair.
    assert data["demo"]["default"] and data["default"] == DEMO
    assert not any(p["default"] for p in data["catalog"])
    assert data["demo"]["target"] == str(demo_model_path())


@needs_demo
def test_run_pair_demo_and_demo_as_default(home, capsys, demo_model):
    assert run("run", "Say hi", "--pair", DEMO, "--max-tokens", "4", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["target"] == str(demo_model_path()) and out["draft"] is None
    assert out["stats"]["generated_tokens"] >= 1

    assert run("config", "set", "default_pair", DEMO) == 0
    assert load_config().default_pair == DEMO
    capsys.readouterr()
    assert run("models") == 0
    out = capsys.readouterr().out
    assert any(x.startswith("*") and DEMO in x for x in out.splitlines())
    assert run("run", "Say hi", "--max-tokens", "2", "--json") == 0  # the default pair now
    assert json.loads(capsys.readouterr().out)["target"] == str(demo_model_path())


def test_demo_is_a_reserved_pair_name(home, tiny_pair_paths, capsys):
    assert run("add", DEMO, "--target", tiny_pair_paths[0]) == 1
    assert "reserved" in capsys.readouterr().err


# ---- one set of defaults ---------------------------------------------------------------------------------------

def run_config(*argv: str):
    """What `localspec run hi ARGV` resolves to (the same resolution as every front end's)."""
    from localspec.cli import build_parser
    from localspec.commands.shared_flags import config_from_args

    return config_from_args(build_parser().parse_args(["run", "hi", *argv]))


def app_sampling(tmp_path):
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.session import ChatSession

    session = ChatSession(AppOptions(workspace=tmp_path, record=False))
    return session.config(session.initial_selection()).params.sampling


@pytest.mark.parametrize("written", [{}, {"sampling.temperature": "0.6", "sampling.top_k": "7"}])
def test_run_the_app_and_config_show_use_the_same_defaults(home, tmp_path, capsys, written):
    for key, value in written.items():
        set_config_value(key, value)
    capsys.readouterr()
    assert run("config", "show", "--json") == 0
    shown = json.loads(capsys.readouterr().out)["sampling"]
    run_sampling = run_config().params.sampling
    app = app_sampling(tmp_path)
    for name in ("temperature", "top_k", "top_p", "min_p"):
        assert shown[name] == getattr(run_sampling, name) == getattr(app, name), name
    if not written:
        assert shown["temperature"] == 0.0 == Settings().sampling.temperature  # greedy unless the user says
    else:
        assert (shown["temperature"], shown["top_k"]) == (0.6, 7)
    assert run_config("--temperature", "0.3").params.sampling.temperature == 0.3  # a flag still wins


def test_thinking_defaults_to_config_and_flags_win(home, tmp_path):
    """One default for reasoning models: config.toml's reasoning.thinking, for `run` and the app alike."""
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.session import ChatSession

    assert run_config().thinking is True and ChatSession(AppOptions(workspace=tmp_path, record=False)).thinking
    set_config_value("reasoning.thinking", "false")
    assert run_config().thinking is False
    assert ChatSession(AppOptions(workspace=tmp_path, record=False)).thinking is False
    assert run_config("--thinking").thinking is True and run_config("--no-thinking").thinking is False


# ---- chat templates --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def no_template(tmp_path_factory):
    from localspec.runtime.tinymodel import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("nt") / "no-template.gguf", chat_template=None)


@pytest.mark.slow  # the CLI in subprocesses
def test_a_gguf_without_a_template_warns_and_a_file_replaces_it(home, no_template, tmp_path,
                                                                capsys):
    assert run("run", "hi", "--target", no_template, "--max-tokens", "2", "--json") == 0
    captured = capsys.readouterr()
    # Its vocabulary has ChatML's markers: ChatML is its family, and the first line says so.
    assert captured.err.startswith("warning: no-template.gguf has no chat template: using the chatml family's "
                                   "(architecture llama, <|im_start|> <|im_end|> tokens)")
    assert "--chat-template FAMILY|FILE" in captured.err
    chatml_prompt = json.loads(captured.out)["stats"]["prompt_tokens"]

    template = tmp_path / "plain.jinja"
    template.write_text(PLAIN_TEMPLATE)
    assert run("run", "hi", "--target", no_template, "--max-tokens", "2", "--json",
               "--chat-template", template) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    # "USER: hi\nASSISTANT:" is not what ChatML renders
    assert json.loads(captured.out)["stats"]["prompt_tokens"] != chatml_prompt
    # A family's name stands for its template.
    assert run("run", "hi", "--target", no_template, "--max-tokens", "2", "--json", "--chat-template", "gemma") == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err and json.loads(captured.out)["stats"]["prompt_tokens"] != chatml_prompt

    # Per pair in config.toml.
    assert run("add", "bare", "--target", no_template) == 0
    assert run("config", "set", "chat_templates.bare", template) == 0
    assert load_config().chat_templates == {"bare": str(template)}
    capsys.readouterr()
    assert run("config", "show") == 0
    assert f'chat_templates.bare = "{template}"' in capsys.readouterr().out
    capsys.readouterr()
    assert run("run", "hi", "--pair", "bare", "--max-tokens", "2", "--json") == 0
    assert "warning" not in capsys.readouterr().err


def test_a_bad_template_file_is_one_line(home, no_template, tmp_path, capsys):
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m.content }")
    for path, words in ((tmp_path / "missing.jinja", "file not found"), (bad, "syntax error"),
                        ("gemma3", "no such file, and no family of that name (families: gpt-oss, ")):
        assert run("run", "hi", "--target", no_template, "--max-tokens", "2", "--chat-template", path) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and len(err.strip().splitlines()) == 1


def test_serve_takes_chat_template_too(home, no_template, tmp_path, capsys):
    pytest.importorskip("fastapi")
    assert run("serve", "--target", no_template, "--chat-template", tmp_path / "missing.jinja") == 1
    err = capsys.readouterr().err
    assert err.startswith("error: chat template") and "file not found" in err


def test_app_shows_the_fallback_warning(home, no_template, tmp_path):
    from localspec.launch.resolve import resolve_selection
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.session import ChatSession

    session = ChatSession(AppOptions(flags=RunFlags(ctx_size=8192, target=str(no_template)), workspace=tmp_path, record=False))
    try:
        info = session.load(resolve_selection(target=no_template))
        assert info.warning and "using the chatml family's" in info.warning
    finally:
        session.shutdown()
    template = tmp_path / "plain.jinja"
    template.write_text(PLAIN_TEMPLATE)
    session = ChatSession(AppOptions(flags=RunFlags(ctx_size=8192, chat_template=str(template)), workspace=tmp_path, record=False))
    try:
        info = session.load(resolve_selection(target=no_template))
        assert info.warning is None and session.pair.target.chat_template == PLAIN_TEMPLATE
    finally:
        session.shutdown()


# ---- vocabulary types --------------------------------------------------------------------------------------------

def test_vocabulary_types_are_named(smollm2, tiny_pair_paths):
    from localspec.runtime.compat import check_draft_compat

    message = check_draft_compat(smollm2, tiny_pair_paths[0]) or ""
    assert "vocabulary types differ (draft SentencePiece (SPM), target byte-level BPE)" in message
    assert "(1 vs 2)" not in message
