"""The turn engine's phases, driven directly (turns/engine.py: TurnEngine.run) on scripted GGUFs whose greedy output
is known token for token (tests/scripted_gguf.py): reasoning, free text up to the call trigger, each call under the
tools' schemas, the probe after a call, and a whole reply under one grammar (response_format).

The agent, serve and bench tests reach these phases through their own layers; here each phase's outcome is
asserted where it is made: the text and reasoning, the calls, the phases run, the finish and the events.
"""

from __future__ import annotations

import json
import threading

import pytest

from localspec.prompting.prompt import chat_prompt_tokens
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative import json_schema_grammar
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig
from localspec.speculative.sources.past_calls import CallHistory
from localspec.tools import Policy, Toolbox
from localspec.turns import Delta, TurnRequest
from localspec.turns.engine import TurnEngine
from localspec.turns.events import CALL, JSON, REASONING, TEXT, PromptRead, ReasoningWritten
from localspec.turns.tool_choice import ToolChoice
from tests.scripted_gguf import QWEN3_ANSWER, write_scripted_gguf

# Qwen2.5: a few words, the tokenizer's own `<tool_call>` token, a call the grammar completes, then the end. The
# grammar forces `\n{"name": "list_dir", "arguments": {`; the script closes the object. A call ends on a newline,
# which is the token the script starts from: after a call the model writes the whole script again (the probe sees
# a second call open).
CALL_SCRIPT = ["hello", "▁world", "<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]
# Qwen3, thinking first: a thought, then the call.
THINK_CALL = ["<think>", "read", "▁file", "</think>", "<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]
# A model that writes the trigger while it thinks has not made a call.
THINK_TRIGGER = ["<think>", "▁use", "<tool_call>", "</think>", "hello", "<|im_end|>"]
# Qwen3 with thinking on may answer without opening a block.
PLAIN = ["hello", "▁world", "<|im_end|>"]
# After the prompt's last token (here "▁ok", not the newline every call ends with), a call and the end: after the
# call the model writes nothing the probe reads as another one.
ONE_CALL = ["<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]

PICK = {"type": "function", "function": {
    "name": "pick", "description": "Pick a mode.",
    "parameters": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["fast"]}},
                   "required": ["mode"]}}}
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes"]}},
                 "required": ["answer"], "additionalProperties": False}
# Drafting sources that propose inside calls and text (no draft model: the scripted file is the only model).
DRAFTING = DraftingConfig(drafters=("schema", "history", "ngram"))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("turn-engine")
    return {"call": write_scripted_gguf(d / "call.gguf", "qwen2.5", CALL_SCRIPT),
            "one-call": write_scripted_gguf(d / "one-call.gguf", "qwen2.5", ONE_CALL, start="▁ok"),
            "think": write_scripted_gguf(d / "think.gguf", "qwen3", QWEN3_ANSWER),
            "think-call": write_scripted_gguf(d / "think-call.gguf", "qwen3", THINK_CALL),
            "think-trigger": write_scripted_gguf(d / "think-trigger.gguf", "qwen3", THINK_TRIGGER),
            "plain": write_scripted_gguf(d / "plain.gguf", "qwen3", PLAIN)}


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> dict[str, dict]:
    box = Toolbox(tmp_path_factory.mktemp("turn-tools"), Policy("read-only"))
    return {s["function"]["name"]: s for s in box.specs()} | {"pick": PICK}


class Turn:
    """One model loaded, a turn run on it, and what the turn sent (events) and returned (result)."""

    def __init__(self, path, drafting=TARGET_ONLY, n_ctx: int = 2048):
        self.pair = load_pair(str(path), None, ctx=ContextSettings(n_ctx=n_ctx, n_threads=1))
        self.engine = build_engine(self.pair, drafting, history=CallHistory())
        self.turns = TurnEngine(self.engine)
        self.events: list = []

    def prompt(self, tools=(), ask: str = "hi", tail: str = "") -> list[int]:
        model = self.pair.target
        tokens = chat_prompt_tokens(model, [{"role": "user", "content": ask}], tools=list(tools) or None)
        return tokens + (model.tokenize(tail, add_special=False) if tail else [])

    def run(self, request: TurnRequest, *, tools_shown=None, tail: str = "", cancel=None, ask: str = "hi"):
        shown = request.tools if tools_shown is None else tools_shown
        self.events = []
        return self.turns.run(self.prompt(shown, ask, tail), request, cancel=cancel, emit=self.events.append)

    def text(self, kind: str) -> str:
        return "".join(e.text for e in self.events if isinstance(e, Delta) and e.kind == kind)

    def close(self) -> None:
        self.pair.close()


@pytest.fixture
def turn(models):
    opened: list[Turn] = []

    def open_turn(name: str, **kw) -> Turn:
        t = Turn(models[name], **kw)
        opened.append(t)
        return t

    yield open_turn
    for t in opened:
        t.close()


def phases(result) -> list[str]:
    return [name for name, _ in result.phases]


def request(*tools, **kw) -> TurnRequest:
    if "choice" in kw:
        kw["choice"] = ToolChoice.parse(kw["choice"])
    return TurnRequest(GenParams(max_tokens=kw.pop("max_tokens", 50)), tuple(tools), **kw)


# -- reasoning ----------------------------------------------------------------------------------------------------

def test_reasoning_comes_first_and_apart_from_the_answer(turn):
    t = turn("think")
    result = t.run(request())
    assert phases(result) == ["reasoning", "text"]
    assert (result.reasoning, result.content, result.finish) == ("what is it", "hello world", "stop")
    assert t.text(REASONING) == "what is it" and t.text(TEXT) == "hello world"
    # The raw text, tags included, beside the deltas (serve's reasoning_format "none"), all before the answer.
    written = [e for e in t.events if isinstance(e, ReasoningWritten)]
    assert "".join(e.text for e in written) == result.written_reasoning == "<think>what is it</think>"
    kinds = [e.kind for e in t.events if isinstance(e, Delta)]
    assert kinds == sorted(kinds, key=lambda k: k != REASONING)


def test_a_trigger_written_while_thinking_is_not_a_call(turn, specs):
    t = turn("think-trigger")
    result = t.run(request(specs["list_dir"]))
    assert result.calls == [] and "<tool_call>" in result.reasoning
    assert result.content == "hello" and phases(result) == ["reasoning", "text"]
    assert t.text(CALL) == ""


def test_an_answer_without_a_block_is_the_answer(turn):
    t = turn("plain")
    result = t.run(request())
    assert (result.content, result.reasoning, result.written_reasoning) == ("hello world", "", "")
    assert set(phases(result)) == {"text"} and t.text(TEXT) == "hello world" and t.text(REASONING) == ""


def test_the_token_limit_inside_the_reasoning_ends_the_turn(turn, specs):
    t = turn("think")
    result = t.run(request(specs["list_dir"], max_tokens=3))
    assert phases(result) == ["reasoning"] and result.finish == "length"
    assert result.content == "" and result.calls == [] and t.text(TEXT) == ""


def test_a_call_after_the_reasoning(turn, specs):
    t = turn("think-call")
    result = t.run(request(specs["list_dir"], max_calls=1))
    assert result.reasoning == "read file" and result.content == ""
    assert result.calls == [("list_dir", {})]
    assert phases(result)[0] == "reasoning" and phases(result)[-1] == "call"


# -- free text up to the call trigger -----------------------------------------------------------------------------

def test_text_runs_to_the_trigger_and_the_trigger_is_never_shown_as_text(turn, specs):
    t = turn("call")
    result = t.run(request(specs["list_dir"], max_calls=1))
    assert phases(result) == ["text", "call"]
    assert result.content == t.text(TEXT) == "hello world"
    assert result.calls == [("list_dir", {})]
    assert t.text(CALL).startswith("<tool_call>\n{\"name\": \"list_dir\"")
    assert any(isinstance(e, PromptRead) for e in t.events)  # the prompt's reading is reported too


def test_choice_none_ends_at_the_trigger_and_says_a_call_was_wanted(turn, specs):
    t = turn("call")
    result = t.run(request(specs["list_dir"], choice="none"))
    assert phases(result) == ["text"] and result.wanted_call
    assert result.content == "hello world" and result.calls == [] and t.text(CALL) == ""


def test_without_tools_the_trigger_is_text(turn):
    t = turn("call")
    result = t.run(request())
    assert phases(result) == ["text"] and result.calls == [] and not result.wanted_call
    assert result.content == "hello world<tool_call>{}}</tool_call>"


def test_the_whole_turns_token_budget_stops_before_the_call(turn, specs):
    t = turn("call")
    result = t.run(request(specs["list_dir"], total_tokens=2))
    assert phases(result) == ["text"] and result.finish == "length"
    assert result.content == "hello world" and result.calls == []


def test_cancel_stops_the_turn_at_the_next_token(turn, specs):
    t = turn("call")
    stop = threading.Event()
    prompt = t.prompt([specs["list_dir"]])

    def emit(ev):  # the user presses Esc as the first word shows (the text shown lags the tokens a little)
        if isinstance(ev, Delta):
            stop.set()

    result = t.turns.run(prompt, request(specs["list_dir"]), cancel=stop, emit=emit)
    assert result.finish == "cancelled" and phases(result) == ["text"] and result.calls == []
    assert result.content == "hello world"


def test_a_prompt_longer_than_the_context_is_reported_not_raised(turn, specs):
    t = turn("call", n_ctx=256)
    result = t.run(request(specs["list_dir"]), ask="hi " * 300)
    assert result.finish == "context" and "does not fit the 256-token context" in result.error
    assert result.phases == [] and result.calls == []


# -- each call under the tools' schemas ---------------------------------------------------------------------------

def test_a_required_call_starts_at_the_first_token(turn, specs):
    t = turn("call")
    result = t.run(request(specs["list_dir"], choice="required", max_calls=1))
    assert phases(result) == ["call"] and result.calls == [("list_dir", {})]
    assert result.content == "" and t.text(TEXT) == ""


def test_the_call_follows_its_schema_where_the_model_would_not(turn, specs):
    """The script closes the arguments at once (`}}`); `pick` requires `mode`, so the grammar writes it. The prompt
    shows two tools, the request allows one: the call can name only that one."""
    t = turn("call")
    result = t.run(request(PICK, max_calls=1), tools_shown=(specs["list_dir"], PICK))
    assert result.calls == [("pick", {"mode": "fast"})] and result.finish == "grammar"


def test_near_its_token_limit_a_call_wraps_up_valid(turn, specs):
    """The scripted model never ends a string on its own; at the call's token limit the grammar closes it, so the
    call is valid (and runs) instead of being cut off."""
    t = turn("call")
    result = t.run(request(specs["read_file"], max_calls=1, call_max_tokens=24))
    [(name, args)] = result.calls
    assert name == "read_file" and set(args) == {"path"} and args["path"].startswith("hello world")
    call = dict(result.phases)["call"]
    assert call.generated_tokens <= 24 and result.notices == []


def test_a_call_cut_off_by_its_token_limit_is_not_returned(turn, specs):
    t = turn("call")
    result = t.run(request(specs["read_file"], max_calls=1, call_max_tokens=12))
    assert result.calls == [] and result.finish == "length"
    assert result.call_error and "cut off by the token limit" in result.notices[0]


# -- the probe after a call ---------------------------------------------------------------------------------------

def test_the_probe_lets_the_model_open_another_call_and_a_repeat_is_dropped(turn, specs):
    t = turn("call")
    result = t.run(request(specs["list_dir"]))
    assert phases(result) == ["text", "call", "probe", "call"]
    assert result.calls == [("list_dir", {})]  # the second, the same call again, is not run twice
    assert result.notices == ["a repeat of the same list_dir call in one turn was dropped"]
    assert result.content == "hello world\nhello world"  # what the probe read before the second call is answer text
    assert t.text(CALL).count("<tool_call>") == 2


def test_the_probe_ends_the_turn_when_no_call_follows(turn, specs):
    t = turn("one-call")
    result = t.run(request(specs["list_dir"]), tail=" ok")
    assert phases(result) == ["text", "call", "probe"]
    assert result.calls == [("list_dir", {})] and result.notices == []


@pytest.mark.parametrize("limit", [{"parallel": False}, {"max_calls": 1}])
def test_no_probe_without_parallel_calls_or_past_the_call_limit(turn, specs, limit):
    t = turn("call")
    result = t.run(request(specs["list_dir"], **limit))
    assert phases(result) == ["text", "call"] and result.calls == [("list_dir", {})]


# -- the whole reply under one grammar (response_format) ----------------------------------------------------------

def test_response_format_puts_the_whole_reply_under_the_grammar(turn):
    t = turn("call")
    result = t.run(request(grammar=json_schema_grammar(ANSWER_SCHEMA)))
    assert phases(result) == ["json"] and result.finish == "grammar"
    assert json.loads(result.content) == {"answer": "yes"} and t.text(JSON) == result.content
    assert result.calls == []


# -- drafting changes how a turn is computed, never what it writes ------------------------------------------------

@pytest.mark.parametrize("name, ask", [
    ("call", {}), ("call", {"max_calls": 1, "call_max_tokens": 24, "tool": "read_file"}),
    ("think-call", {"max_calls": 1}), ("think", {})])
def test_drafting_gives_the_same_turn_as_the_target_alone(turn, specs, name, ask):
    ask = dict(ask)
    tool = specs[ask.pop("tool", "list_dir")]
    outcomes = []
    for drafting in (TARGET_ONLY, DRAFTING):
        t = turn(name, drafting=drafting)
        result = t.run(request(tool, **ask))
        outcomes.append((result.content, result.reasoning, result.calls, phases(result), result.finish))
        passes = result.stats.target_passes
    assert outcomes[0] == outcomes[1]
    if result.calls:  # the schema drafts what the grammar forces: fewer passes than tokens
        assert passes < result.generated_tokens
