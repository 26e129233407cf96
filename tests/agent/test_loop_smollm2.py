"""End to end with a real instruct model (SmolLM2-135M) in the loop: it calls read_file on a real file, gets the
content back and answers with it; a denied write goes back to it as a failed result; two calls in one turn run
in order. The first step uses tool_choice so a 135M model reliably starts with a call."""

from __future__ import annotations

import pytest

from localspec.agent import (
    Agent,
    ApprovalDecided,
    ApprovalNeeded,
    StepStats,
    ToolCallFinished,
    ToolCallStarted,
)
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.tools import Toolbox
from localspec.turns import Delta

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine(smollm2_f16):
    # F16: batched and one-at-a-time logits agree, so what the model answers does not depend on how drafting
    # batched it (with Q4_1, a loaded CI machine drafted differently and flipped a call). One thread: robust when the machine's cores are shared; the module shares one engine (and its KV cache,
    # so the common system prompt + tool definitions are evaluated once).
    return build_engine(load_pair(str(smollm2_f16), None, ctx=ContextSettings(n_ctx=4096, n_threads=1)))


@pytest.fixture
def workspace_files():
    return {"notes.txt": "The secret word is pineapple.\n", "a.txt": "Alpha file says: apples.\n",
            "b.txt": "Beta file says: bananas.\n"}


def test_reads_a_real_file_and_answers_with_its_content(engine, workspace):
    events = []
    agent = Agent(engine, Toolbox(workspace, "auto"), params=GenParams(max_tokens=40), max_steps=2,
                  tools=["read_file"])
    result = agent.run('Call read_file with path "notes.txt", then tell me the secret word written in it.',
                       tool_choice="required", on_event=events.append)
    # The tool really ran on the real file and its text went back to the model.
    assert len(result.tool_calls) == 1
    call = result.tool_calls[0]
    assert call.name == "read_file" and call.arguments["path"] == "notes.txt"
    assert call.result.ok and call.result.content.startswith("The secret word is pineapple.")
    tool_msg = next(m for m in agent.messages if m["role"] == "tool")
    assert "pineapple" in tool_msg["content"] and tool_msg["tool_call_id"] == call.id
    # A second step generated text after receiving it, using the content.
    assert result.steps == 2
    assert [e.step for e in events if isinstance(e, StepStats)] == [1, 2]
    step2_text = "".join(e.text for e in events if isinstance(e, Delta) and e.step == 2 and e.kind == "text")
    assert step2_text.strip() and result.text
    assert "pineapple" in result.text.lower()
    assert agent.messages[-1] == {"role": "assistant", "content": result.text}


def test_denied_write_is_a_failed_result_the_model_sees(engine, workspace):
    asked, events = [], []

    def deny(request):
        asked.append(request)
        return False

    agent = Agent(engine, Toolbox(workspace, "ask", deny), params=GenParams(max_tokens=24), max_steps=2,
                  tools=["read_file", "write_file"])
    result = agent.run('Call write_file with path "out.txt" and content "hello".', tool_choice="write_file",
                       on_event=events.append)
    assert len(asked) >= 1 and asked[0].tool == "write_file" and asked[0].diff is not None
    call = result.tool_calls[0]
    assert call.name == "write_file" and not call.result.ok and "denied by the user" in call.result.error
    assert not (workspace / "out.txt").exists()
    tool_msg = next(m for m in agent.messages if m["role"] == "tool")
    assert tool_msg["content"].startswith("Error:") and "denied" in tool_msg["content"]
    assert result.steps == 2  # the model was called again with the refusal in its context
    kinds = [type(e) for e in events]
    assert kinds.index(ToolCallStarted) < kinds.index(ApprovalNeeded) < kinds.index(ApprovalDecided) \
        < kinds.index(ToolCallFinished)
    assert next(e for e in events if isinstance(e, ApprovalDecided)).decision == "deny_once"


def test_two_calls_in_one_turn_run_in_order(engine, workspace):
    agent = Agent(engine, Toolbox(workspace, "auto"), params=GenParams(max_tokens=32), max_steps=2,
                  tools=["read_file"])
    # An earlier exchange in the conversation shows parallel calls (as a restored session would).
    agent.messages += [
        {"role": "user", "content": "Read x.txt and y.txt."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "aaaaaaaa1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "x.txt"}}},
            {"id": "aaaaaaaa2", "type": "function", "function": {"name": "read_file", "arguments": {"path": "y.txt"}}},
        ]},
        {"role": "tool", "tool_call_id": "aaaaaaaa1", "content": "x"},
        {"role": "tool", "tool_call_id": "aaaaaaaa2", "content": "y"},
        {"role": "assistant", "content": "x.txt contains x and y.txt contains y."},
    ]
    events = []
    result = agent.run("Read a.txt and b.txt.", tool_choice="required", on_event=events.append)
    step1 = [c for c in result.tool_calls if c.step == 1]
    assert [c.arguments["path"] for c in step1] == ["a.txt", "b.txt"]
    assert [c.result.content for c in step1] == ["Alpha file says: apples.\n", "Beta file says: bananas.\n"]
    # Events and tool messages follow the call order: start a, result a, start b, result b.
    order = [(type(e).__name__, e.call_id) for e in events if isinstance(e, (ToolCallStarted, ToolCallFinished))]
    ids = [c.id for c in step1]
    assert order[:4] == [("ToolCallStarted", ids[0]), ("ToolCallFinished", ids[0]),
                         ("ToolCallStarted", ids[1]), ("ToolCallFinished", ids[1])]
    start = len(agent.messages) - len(result.messages)
    new = agent.messages[start:]
    assert [c["id"] for c in new[1]["tool_calls"]] == ids
    assert [m.get("tool_call_id") for m in new[2:4]] == ids
