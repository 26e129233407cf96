"""The app's plain-Python parts: batching of streamed tokens, statistics views, the relay from
agent events to UI events, the settings form's field types, and the command-line options."""

from __future__ import annotations

import argparse
import threading

import pytest

from localspec.errors import ConfigError
from localspec.speculative.stats import Stats
from localspec.tui.livestats import SessionView, StatsView
from localspec.tui.turn import Batcher, TextChunk


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_batcher_coalesces_tokens_and_merges_runs_by_origin():
    posted, clock = [], Clock()
    b = Batcher(posted.append, interval=0.05, clock=clock)
    for i, (text, origin) in enumerate([("a", "target"), ("b", "model"), ("c", "model"), ("d", "target")]):
        clock.t = i * 0.01
        b.add(text, origin)
    assert posted == []  # 30 ms < one interval: nothing posted yet
    clock.t = 0.06
    b.add("e", "target")
    assert len(posted) == 1
    chunk = posted[0]
    assert chunk.runs == (("target", "a"), ("model", "bc"), ("target", "de")) and chunk.kind == "text"
    assert chunk.rate == pytest.approx(5 / 0.06)
    b.flush()
    assert posted[1:] == []  # nothing pending


def test_batcher_splits_text_from_call_and_skips_rates_across_pauses():
    posted, clock = [], Clock()
    b = Batcher(posted.append, interval=0.05, clock=clock)
    b.add("Let me look.", "target")
    clock.t = 0.01
    b.add('{"name"', "schema", kind="call")
    assert [c.kind for c in posted] == ["text"]
    b.flush(pause=True)  # a tool runs now
    clock.t = 5.0
    b.add("done", "target")
    clock.t = 5.1
    b.add("!", "target")
    assert posted[-1].text == "done!" and posted[-1].rate == pytest.approx(2 / 0.1)  # not 2 tokens over 5 s
    b.add("", "target", counts=False)  # a text flush that is not a token
    assert posted[-1].text == "done!"


def test_stats_view_live_and_final():
    s = Stats(generated_tokens=40, target_passes=16, drafted=50, accepted=24, target_token_s=0.02, draft_s=0.2,
              verify_s=0.7, decode_s=0.6)
    s.drafters["model"].drafted, s.drafters["model"].accepted = 50, 24
    live = StatsView.of(s, elapsed_s=2.0, target_token_s=0.03)
    # speedup: 40 tokens x what one costs with the target alone (the single-token pass, judging its row, the loop's
    # time per token) over the 2.0 s so far, as the final figure is computed
    step = 0.03 + (0.7 - 0.6) / 16 + (2.0 - 0.2 - 0.7) / 40
    assert live.tokens_per_second == 20.0 and live.estimated_speedup == pytest.approx(40 * step / 2.0)
    assert live.acceptance_rate == 24 / 50 and live.mean_accepted_length == 2.5 and live.drafters == {"model": (50, 24)}
    s.wall_s, s.prefill_s, s.finish_reason = 3.0, 1.0, "length"
    final = StatsView.of(s)
    # final: the whole 2.0 s of generation against 40 plain steps (the single-token pass, this run's judging time
    # per pass and the loop's time per token)
    step = 0.02 + (0.7 - 0.6) / 16 + (2.0 - 0.2 - 0.7) / 40
    assert final.tokens_per_second == 20.0 and final.estimated_speedup == pytest.approx(40 * step / 2.0)
    assert final.finish_reason == "length"
    totals = SessionView().add(final, 2.0).add(final, 2.0)
    assert (totals.turns, totals.generated, totals.tokens_per_second) == (2, 80, 20.0)
    assert totals.acceptance_rate == 24 / 50 and totals.mean_accepted_length == 2.5


def test_relay_batches_the_agents_text_and_passes_the_rest_on(tiny_pair_paths, tmp_path):
    """The session's relay, fed the agent's own event types, on a real engine."""
    from localspec.agent.events import Notice, ToolCallFinished, ToolCallStarted
    from localspec.turns import Delta
    from localspec.runtime.pair import load_pair
    from localspec.speculative.builder import build_engine
    from localspec.tools import ToolResult
    from localspec.tui.session import Relay

    pair = load_pair(*tiny_pair_paths)
    try:
        engine = build_engine(pair)
        posted = []
        relay = Relay(posted.append, engine)
        relay(Delta("Let me check.", origin="target", token=5, step=1))
        relay(Delta('{"name": "list_dir"', "call", origin="schema", token=6, step=1))
        relay(Delta(', "arguments": {}}', "call", origin="schema", token=7, step=1))
        started = ToolCallStarted(1, "c1", "list_dir", {})
        finished = ToolCallFinished(1, "c1", "list_dir", {}, ToolResult.success("a.txt"))
        notice = Notice(1, "a repeat of the same call was dropped")
        for ev in (started, finished, notice):
            relay(ev)
        relay.flush()
    finally:
        pair.close()
    kinds = [type(e).__name__ for e in posted]
    assert kinds == ["TextChunk", "TextChunk", "ToolCallStarted", "ToolCallFinished", "Notice"]
    assert posted[0] == TextChunk((("target", "Let me check."),), None, None, "text")
    assert posted[1].kind == "call" and posted[1].text == '{"name": "list_dir", "arguments": {}}'
    assert posted[2:] == [started, finished, notice]


def test_settings_form_field_types():
    from typing import Literal

    from localspec.settings.config_toml import config_keys
    from localspec.tui.screens.settings import _unwrap, field_annotation, widget_id

    assert _unwrap(field_annotation("drafters.schema")) == (bool, False)
    assert _unwrap(field_annotation("draft_max")) == (int, True)
    assert _unwrap(field_annotation("approval"))[0] == Literal["ask", "read-only", "auto"]
    assert _unwrap(field_annotation("sampling.seed")) == (int, True)
    assert all(field_annotation(k) is not None for k in config_keys())
    assert widget_id("sampling.top_p") == "cfg-sampling-top_p"


# ---- command line ------------------------------------------------------------------------------------------------

def parse(*argv: str) -> argparse.Namespace:
    from localspec.cli import build_parser

    return build_parser().parse_args(argv)


def test_top_level_options_pick_the_models_for_the_app(tmp_path, tiny_pair_paths):
    from localspec.commands.tui import cmd_tui, options_from_args

    target, draft = tiny_pair_paths
    args = parse("--target", str(target), "--draft", str(draft), "--workspace", str(tmp_path))
    assert args.tui_func is cmd_tui and getattr(args, "func", None) is None
    opts = options_from_args(args)
    f = opts.flags
    assert (f.target, f.draft, opts.workspace, f.pair) == (str(target), str(draft), tmp_path.resolve(), None)
    assert options_from_args(parse("--pair", "qwen3-1.7b")).flags.pair == "qwen3-1.7b"
    assert options_from_args(parse("tui", "--pair", "x")).flags.pair == "x"  # the explicit subcommand too
    # Every model, drafting and sampling flag of `run` (one table: commands/shared_flags.py).
    many = options_from_args(parse("--pair", "p", "--ctx-size", "2048", "--threads", "3", "--drafters", "ngram",
                                   "--draft-max", "5", "--temperature", "0.2", "--n-gpu-layers", "0",
                                   "--max-tokens", "77", "--no-thinking")).flags
    assert (many.ctx_size, many.threads, many.drafters, many.draft_max, many.temperature, many.n_gpu_layers,
            many.max_tokens, many.thinking) == (2048, 3, "ngram", 5, 0.2, 0, 77, False)
    assert options_from_args(parse()).max_tokens == 1024  # the app's own default reply length
    # Subcommands keep their own --target: the app's options use other names.
    run_args = parse("run", "hi", "--target", str(target))
    assert run_args.target == str(target) and not hasattr(run_args, "tui_target")


@pytest.mark.parametrize("argv, message", [
    (("--draft", "d.gguf"), "--draft needs --target"),
    (("--workspace", "/no/such/dir"), "not an existing directory"),
    (("--target", "/no/such.gguf"), "file not found"),
])
def test_bad_options_are_one_line_errors(argv, message):
    from localspec.commands.tui import options_from_args

    with pytest.raises(ConfigError, match=message):
        options_from_args(parse(*argv))


def test_pair_and_target_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        parse("--pair", "a", "--target", "b")
    assert "not allowed with argument" in capsys.readouterr().err


def test_only_the_tui_package_imports_textual():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2] / "localspec"
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if "tui" not in p.relative_to(root).parts[:1]
                 and re.search(r"^\s*(from|import)\s+textual\b", p.read_text(), re.M)]
    assert offenders == []


def test_approver_answers_deny_when_the_turn_is_cancelled(tmp_path):
    """The app's approver blocks the generating thread; a cancelled turn answers deny without a user."""
    from localspec.tools import ApprovalRequest, Decision
    from localspec.tools.safety.danger import Danger
    from localspec.tui.app import LocalspecApp
    from localspec.tui.launch_options import AppOptions

    app = LocalspecApp(AppOptions(workspace=tmp_path, record=False))
    app.turn_cancel = threading.Event()
    app.turn_cancel.set()
    req = ApprovalRequest("run_shell", {"command": "ls"}, tmp_path, Danger("low"), "run: ls")
    assert app.approve(req) is Decision.DENY_ONCE


def test_every_origin_in_the_registry_has_a_colour_and_a_label():
    from localspec.speculative.names import ORIGINS
    from localspec.tui.origins import COLOURS, HEADS, LABELS, legend

    assert set(ORIGINS) <= set(COLOURS) and set(ORIGINS) <= set(LABELS)
    assert all(LABELS[o] in legend().plain for o in ORIGINS if o not in HEADS)
    assert "■ head" in legend().plain and len({COLOURS[h] for h in HEADS}) == 1  # one entry for a pair's one head
