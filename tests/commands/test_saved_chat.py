"""A plain `localspec run` (no tools) is a saved conversation too (issue 39.5): recorded like `run --tools`, carried
on headless with --continue or --resume ID, and readable by `sessions`, the app and `run --tools --continue`.
The CLI as a user runs it (subprocesses, real llama.cpp on the tiny GGUF)."""

from __future__ import annotations

import json

import pytest

from localspec.conversations import ConversationStore
from tests.cli_helpers import AGENT_ARGS, localspec

pytestmark = pytest.mark.slow  # the CLI in subprocesses, 1-2 s each

N = 4  # tokens per reply (the tiny model never ends on its own)


def run(home, *args, check: bool = True):
    proc = localspec("run", *args, home=home)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def plain(home, tiny_target, prompt: str, *args) -> dict:
    return json.loads(run(home, prompt, "--target", tiny_target, "--no-draft", "--max-tokens", N, "--json",
                          *args).stdout)


def saved(home, cid: str):
    with ConversationStore(home / "data" / "conversations.sqlite3") as store:
        return store.get(cid, turns=True)


def test_a_plain_run_is_saved_and_continued(tiny_target, tmp_path):
    home = tmp_path / "home"
    first = plain(home, tiny_target, "my name is Ada")
    cid = first["conversation"]
    conv = saved(home, cid)
    assert [m["role"] for m in conv.messages] == ["user", "assistant"]
    assert conv.messages[0]["content"] == "my name is Ada" and conv.messages[1]["content"] == first["text"].strip()
    assert conv.title == "my name is Ada" and conv.pair == "target.gguf" and conv.params["tools"] is False
    assert len(conv.turns) == 1 and conv.turns[0]["finish_reason"] == "length"
    assert conv.turns[0]["stats"]["generated_tokens"] == N

    alone = plain(home, tiny_target, "what is my name?", "--no-transcript")
    again = plain(home, tiny_target, "what is my name?", "--continue")
    assert alone["conversation"] is None and again["conversation"] == cid
    # The model read the conversation so far: the first exchange is in the prompt.
    assert again["stats"]["prompt_tokens"] > alone["stats"]["prompt_tokens"] + len("my name is Ada")
    conv = saved(home, cid)
    assert [m["content"] for m in conv.messages if m["role"] == "user"] == ["my name is Ada", "what is my name?"]
    assert len(conv.turns) == 2

    # --resume ID (a unique prefix) carries on that one, streamed: the summary line says where it was saved.
    other = plain(home, tiny_target, "an unrelated chat")["conversation"]
    streamed = run(home, "and then?", "--resume", cid[:4], "--target", tiny_target, "--no-draft", "--max-tokens", N)
    lines = streamed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"; saved as {cid}]"), streamed.stderr
    assert [m["content"] for m in saved(home, cid).messages][-2] == "and then?"
    assert len(saved(home, other).messages) == 2  # untouched


def test_the_system_prompt_is_the_runs_then_the_conversations(tiny_target, tmp_path):
    home = tmp_path / "home"
    bare = plain(home, tiny_target, "hi", "--no-transcript")
    told = plain(home, tiny_target, "hi", "--system", "Answer in French.")
    assert told["stats"]["prompt_tokens"] > bare["stats"]["prompt_tokens"]  # --system reached the prompt
    cid = told["conversation"]
    assert saved(home, cid).system == "Answer in French."
    kept = plain(home, tiny_target, "again", "--continue")  # carried on: the conversation's own system prompt
    assert saved(home, cid).system == "Answer in French." and kept["conversation"] == cid


@pytest.mark.parametrize("args, words", [
    (("--raw", "--continue"), "--raw sends the prompt as it is"),
    (("--resume", "nothing-like-this"), "no conversation 'nothing-like-this'"),
    (("--continue",), "there is no saved conversation yet to continue"),
])
def test_what_cannot_be_carried_on_is_one_line(tiny_target, tmp_path, args, words):
    proc = run(tmp_path / "home", "hi", "--target", tiny_target, "--max-tokens", N, *args, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and words in lines[0], proc.stderr
    assert proc.stdout == ""


def test_raw_and_no_transcript_save_nothing(tiny_target, tmp_path):
    home = tmp_path / "home"
    assert plain(home, tiny_target, "hi", "--raw")["conversation"] is None
    assert plain(home, tiny_target, "hi", "--no-transcript")["conversation"] is None
    listed = localspec("sessions", "--json", home=home)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_run_tools_and_a_plain_run_carry_on_each_others_conversations(tiny_target, workspace, tmp_path):
    home = tmp_path / "home"
    agent = json.loads(run(home, "list the files", "--target", tiny_target, *AGENT_ARGS, "--approve", "auto",
                           "--workspace", workspace, "--json").stdout)
    cid = agent["conversation"]
    before = saved(home, cid)
    # A plain run carries on the tools conversation: the tool calls and results are in its prompt, and the
    # conversation keeps its workspace and the settings a plain run does not have (approval, tool choice).
    alone = plain(home, tiny_target, "so what is there?", "--no-transcript")
    again = plain(home, tiny_target, "so what is there?", "--continue")
    assert again["conversation"] == cid
    assert again["stats"]["prompt_tokens"] > alone["stats"]["prompt_tokens"] + 20
    after = saved(home, cid)
    assert after.workspace == before.workspace == str(workspace.resolve())
    assert after.params["approve"] == "auto" and after.params["tool_choice"] == "required"
    assert after.messages[:len(before.messages)] == before.messages
    assert [m["role"] for m in after.messages[len(before.messages):]] == ["user", "assistant"]

    # And `run --tools --continue` carries on a plain run's conversation.
    chat = plain(home, tiny_target, "a plain question")["conversation"]
    tools = json.loads(run(home, "now use a tool", "--target", tiny_target, *AGENT_ARGS, "--approve", "auto",
                           "--workspace", workspace, "--continue", "--json").stdout)
    assert tools["conversation"] == chat
    assert [m["content"] for m in saved(home, chat).messages if m["role"] == "user"] == ["a plain question",
                                                                                          "now use a tool"]
