"""A draft head reaches the engine in every front end (`run`, `run --tools`, `serve`, the app, `bench`): a model with
MTP layers drafts with them, unless `--no-mtp` (or drafters.mtp = false) says not to; `--draft` naming a head file
(EAGLE-3, DFlash, an mtp-*.gguf) gives that head instead of a draft model. Each front end runs for real on the tiny
head files (tests/head_helpers.py) and the test looks at the engine it built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localspec.speculative import builder
from localspec.speculative.policy.hybrid import HybridDrafter
from tests.cli_helpers import one_call_suite


class Built:
    def __init__(self, monkeypatch):
        self.engines: list[tuple] = []
        real = builder.build_engine

        def build(pair, *a, **kw):
            engine = real(pair, *a, **kw)
            drafter = engine.drafter
            heads = [h.name for h, _ in drafter.heads] if isinstance(drafter, HybridDrafter) else []
            self.engines.append((heads, pair.head.kind if pair.head else None, pair.draft is not None,
                                 pair.target.settings.load_mtp))
            return engine

        for module in ("localspec.speculative.builder", "localspec.launch.open", "localspec.bench.runner"):
            monkeypatch.setattr(f"{module}.build_engine", build)


def _main(argv: list[str]) -> None:
    from localspec.cli import main

    assert main(argv) == 0


def _front_end(name: str, model_args: list[str], tmp_path: Path, monkeypatch) -> None:
    if name == "run":
        _main(["run", "hi", *model_args, "--max-tokens", "2", "--json"])
    elif name == "tools":
        _main(["run", "hi", "--tools", "--workspace", str(tmp_path), "--approve", "never", "--no-transcript",
               "--max-steps", "1", "--max-tokens", "2", "--call-max-tokens", "4", "--tool-names", "list_dir", "--json",
               *model_args])
    elif name == "serve":
        monkeypatch.setattr("localspec.serve.server.serve_forever", lambda app, host, port: None)
        _main(["serve", *model_args, "--port", "0"])
    elif name == "app":
        from localspec.cli import build_parser
        from localspec.commands.tui import options_from_args
        from localspec.tui.session import ChatSession

        options = options_from_args(build_parser().parse_args([*model_args, "--workspace", str(tmp_path)]))
        options.record = False
        session = ChatSession(options)
        session.load(session.initial_selection())
        session.shutdown()
    elif name == "bench":
        suite = one_call_suite(tmp_path)
        _main(["bench", str(suite), *model_args, "--configs", "baseline,head", "--max-tokens", "4", "--json"])


FRONT_ENDS = ("run", "tools", "serve", "app", "bench")


@pytest.mark.parametrize("front_end, case", [
    pytest.param(f, c, marks=() if (f, c) in {("run", "mtp"), ("run", "no-mtp")} else pytest.mark.slow)
    for f in FRONT_ENDS for c in ("mtp", "no-mtp", "eagle3-file", "mtp-file")])
def test_a_head_reaches_the_engine(front_end, case, head_files, tmp_path, home, monkeypatch, capsys):
    args = {"mtp": ["--target", head_files.qwen35],
            "no-mtp": ["--target", head_files.qwen35, "--no-mtp"],
            "eagle3-file": ["--target", head_files.llama, "--draft", head_files.eagle3],
            "mtp-file": ["--target", head_files.qwen35_plain, "--draft", head_files.mtp_only]}[case]
    built = Built(monkeypatch)
    _front_end(front_end, [str(a) for a in args], tmp_path, monkeypatch)
    capsys.readouterr()
    heads, kind, has_draft, load_mtp = built.engines[-1]  # bench: the last config's ("head")
    want = {"mtp": (["mtp"], "mtp", True), "no-mtp": ([], None, False), "eagle3-file": (["eagle3"], "eagle3", False),
            "mtp-file": (["mtp"], "mtp", False)}[case]
    assert (heads, kind, load_mtp) == want
    assert not has_draft  # a head file named as the draft is not loaded as a draft model


def test_drafters_config_keys_switch_the_head_off(head_files, tmp_path, home, monkeypatch, capsys):
    """drafters.mtp = false in config.toml is --no-mtp; drafters.head = false leaves every head out."""
    from localspec.settings.config_toml import config_keys

    assert {"drafters.head", "drafters.mtp"} <= set(config_keys())
    for key in ("LOCALSPEC_DRAFTERS_MTP", "LOCALSPEC_DRAFTERS_HEAD"):
        monkeypatch.setenv(key, "false")
        built = Built(monkeypatch)
        _front_end("run", ["--target", str(head_files.qwen35)], tmp_path, monkeypatch)
        assert built.engines[-1][:3] == ([], None, False)
        monkeypatch.delenv(key)
    capsys.readouterr()


def test_run_json_says_which_head_drafts_and_what_its_step_costs(head_files, home, capsys):
    _main(["run", "read the file", "--target", str(head_files.llama), "--draft", str(head_files.eagle3),
           "--max-tokens", "8", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["draft"] is None
    head = out["head"]
    assert head["kind"] == "eagle3" and head["file"].endswith("eagle3.gguf") and head["target_layers"] == [0, 1, 2]
    assert head["step_s"] > 0
    _main(["run", "read the file", "--target", str(head_files.llama), "--max-tokens", "8", "--json"])
    assert json.loads(capsys.readouterr().out)["head"] is None


def test_head_beside_a_draft_model(head_files, tiny_draft, tmp_path, home, monkeypatch, capsys):
    """--head names a head file whatever --draft names: the hybrid then has both, the head asked first."""
    built = Built(monkeypatch)
    _front_end("run", ["--target", str(head_files.llama), "--draft", str(tiny_draft), "--head",
                       str(head_files.eagle3)], tmp_path, monkeypatch)
    capsys.readouterr()
    assert built.engines[-1][:3] == (["eagle3"], "eagle3", True)


def test_head_flag_refuses_a_model_file(head_files, home, capsys):
    from localspec.cli import main

    assert main(["run", "hi", "--target", str(head_files.llama), "--head", str(head_files.qwen35), "--json"]) == 1
    err = capsys.readouterr().err
    assert "qwen35.gguf is not a draft head" in err and len(err.strip().splitlines()) == 1
