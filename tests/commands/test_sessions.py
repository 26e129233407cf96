"""`localspec sessions ...`, `--continue` / `--resume` and the saving of `run --tools` conversations, as a user runs
them (subprocess; the agent runs on real llama.cpp with the tiny GGUF)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localspec.conversations import ConversationStore
from tests.cli_helpers import AGENT_ARGS, localspec


def db(home: Path) -> Path:
    return home / "data" / "conversations.sqlite3"


def seed(home: Path, *titles: str) -> list[str]:
    ids = []
    with ConversationStore(db(home)) as store:
        for t in titles:
            cid = store.create(pair="tiny", workspace="/ws", system="sys")
            store.add_message(cid, {"role": "user", "content": t})
            store.add_message(cid, {"role": "assistant", "content": f"answer to {t}"})
            ids.append(cid)
    return ids


def ok(proc):
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.slow  # the CLI in subprocesses
def test_run_tools_is_saved_and_listed_with_its_messages(tiny_target, workspace, tmp_path):
    home = tmp_path / "home"
    run = ok(localspec("run", "list the files", "--target", tiny_target, *AGENT_ARGS, "--approve", "auto",
                       "--workspace", workspace, "--json", home=home))
    out = json.loads(run.stdout)
    cid = out["conversation"]
    listed = json.loads(ok(localspec("sessions", "--json", home=home)).stdout)
    assert [c["id"] for c in listed] == [cid]
    conv = listed[0]
    assert {"id", "title", "created", "updated", "pair", "workspace", "messages"} <= set(conv)
    assert conv["title"] == "list the files" and conv["pair"] == tiny_target.name
    assert conv["workspace"] == str(workspace.resolve())
    roles = [m["role"] for m in conv["messages"]]
    assert roles[:3] == ["user", "assistant", "tool"] and all("content" in m for m in conv["messages"])
    assert conv["messages"][1]["tool_calls"][0]["function"]["name"] == out["tool_calls"][0]["name"]
    shown = json.loads(ok(localspec("sessions", "show", cid[:5], "--json", home=home)).stdout)
    assert shown["turns"][0]["finish_reason"] == out["finish_reason"]  # per-turn statistics are kept
    assert shown["turns"][0]["stats"]["generated_tokens"] == out["stats"]["generated_tokens"]
    # Streaming mode says where it went.
    streamed = ok(localspec("run", "list again", "--target", tiny_target, *AGENT_ARGS, "--approve", "never",
                            "--workspace", workspace, home=home))
    assert "saved as " in streamed.stderr


@pytest.mark.slow  # the CLI in subprocesses
def test_run_tools_carries_on_a_saved_conversation(tiny_target, workspace, tmp_path):
    home = tmp_path / "home"
    common = ("--target", tiny_target, *AGENT_ARGS, "--approve", "never", "--json")
    first = json.loads(ok(localspec("run", "list the files", *common, "--workspace", workspace,
                                    home=home)).stdout)["conversation"]
    before = json.loads(ok(localspec("sessions", "show", first, "--json", home=home)).stdout)["messages"]
    # From another folder: --resume runs in the conversation's own workspace, with its messages before the new one.
    again = json.loads(ok(localspec("run", "and now?", *common, "--resume", first[:5], home=home,
                                    cwd=tmp_path)).stdout)
    assert again["conversation"] == first
    after = json.loads(ok(localspec("sessions", "show", first, "--json", home=home)).stdout)
    assert after["messages"][:len(before)] == before
    assert after["messages"][len(before)] == {"role": "user", "content": "and now?"}
    assert after["workspace"] == str(workspace.resolve()) and len(after["turns"]) == 2
    latest = json.loads(ok(localspec("run", "once more", *common, "--continue", home=home, cwd=tmp_path)).stdout)
    assert latest["conversation"] == first
    listed = json.loads(ok(localspec("sessions", "--json", home=home)).stdout)
    assert len(listed) == 1  # the same conversation, carried on twice
    assert listed[0]["messages"][len(after["messages"])] == {"role": "user", "content": "once more"}


@pytest.mark.slow  # the CLI in subprocesses
def test_no_transcript_saves_nothing(tiny_target, workspace, tmp_path):
    home = tmp_path / "home"
    run = ok(localspec("run", "list the files", "--target", tiny_target, *AGENT_ARGS, "--approve", "never",
                       "--workspace", workspace, "--json", "--no-transcript", home=home))
    assert json.loads(run.stdout)["conversation"] is None
    assert json.loads(ok(localspec("sessions", "--json", home=home)).stdout) == []


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_list_is_newest_first_and_searchable(tmp_path):
    home = tmp_path / "home"
    first, second = seed(home, "alpha question", "beta question")
    listed = json.loads(ok(localspec("sessions", "--json", home=home)).stdout)
    assert [c["id"] for c in listed] == [second, first]
    assert listed[0]["messages"] == [{"role": "user", "content": "beta question"},
                                     {"role": "assistant", "content": "answer to beta question"}]
    table = ok(localspec("sessions", home=home)).stdout.splitlines()
    assert table[0].split()[:2] == ["ID", "LAST"] and second in table[1] and "beta question" in table[1]
    only = json.loads(ok(localspec("sessions", "--search", "ALPHA", "--json", home=home)).stdout)
    assert [c["id"] for c in only] == [first]
    empty = ok(localspec("sessions", "--search", "nothing", home=tmp_path / "home"))
    assert empty.stdout == "" and "no saved conversations" in empty.stderr


def test_the_list_shows_each_pair_whole(home, capsys):
    from localspec.cli import main

    remote = "Qwen2.5-Coder-7B-Instruct @ gpu-box.local:8000"
    with ConversationStore(db(home)) as store:
        for pair, title in ((remote, "on the server"), ("smol", "here")):
            cid = store.create(pair=pair)
            store.add_message(cid, {"role": "user", "content": title})
    assert main(["sessions"]) == 0
    head, *rows = capsys.readouterr().out.splitlines()
    assert remote in rows[1] and " smol " in rows[0]
    assert {row.index(title) for row, title in zip(rows, ("here", "on the server"))} == {head.index("TITLE")}


@pytest.mark.slow  # the CLI in subprocesses
def test_export_rename_delete(tmp_path):
    home = tmp_path / "home"
    (cid,) = seed(home, "Explain the build")
    md = Path(ok(localspec("sessions", "export", cid, home=home)).stdout.strip())
    assert md.parent == home / "data" / "exports" and md.suffix == ".md"  # the data dir by default
    second = localspec("sessions", "export", cid, home=home)  # the same default name: a new file, and said so
    assert second.returncode == 0 and Path(second.stdout.strip()).name == md.stem + "-2.md"
    assert f"note: {md} exists" in second.stderr and "--force" in second.stderr
    forced = ok(localspec("sessions", "export", cid, "--force", home=home))
    assert Path(forced.stdout.strip()) == md and not forced.stderr  # --force replaces the earlier export
    assert "## You\n\nExplain the build" in md.read_text()
    out = tmp_path / "out.json"
    res = json.loads(ok(localspec("sessions", "export", cid, "--format", "json", "-o", out, "--json",
                                  home=home)).stdout)
    assert res == {"id": cid, "format": "json", "path": str(out.resolve())}
    assert json.loads(out.read_text())["messages"][0]["content"] == "Explain the build"
    again = localspec("sessions", "export", cid, "--format", "json", "-o", out, home=home)
    assert again.returncode == 1 and "already exists" in again.stderr and "--force" in again.stderr
    ok(localspec("sessions", "export", cid, "--format", "json", "-o", out, "--force", home=home))

    renamed = json.loads(ok(localspec("sessions", "rename", cid, "Build notes", "--json", home=home)).stdout)
    assert renamed == {"id": cid, "title": "Build notes"}
    assert json.loads(ok(localspec("sessions", "--json", home=home)).stdout)[0]["title"] == "Build notes"
    refused = localspec("sessions", "delete", cid, home=home)  # no terminal to ask on, and no --yes: kept
    assert refused.returncode == 1 and "--yes" in refused.stderr and "Build notes" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert json.loads(ok(localspec("sessions", "--json", home=home)).stdout)[0]["id"] == cid
    deleted = json.loads(ok(localspec("sessions", "--json", "delete", cid, "--yes", home=home)).stdout)
    assert deleted == {"id": cid, "deleted": True}
    assert json.loads(ok(localspec("sessions", "--json", home=home)).stdout) == []


@pytest.mark.parametrize("argv, needle", [
    (("sessions", "show", "nope"), "no conversation 'nope'"),
    (("sessions", "delete", "nope"), "no conversation 'nope'"),
    (("sessions", "rename", "nope", "x"), "no conversation 'nope'"),
    (("sessions", "export", "nope"), "no conversation 'nope'"),
    (("sessions", "--limit", "0"), "--limit must be >= 1"),
    (("--continue",), "no saved conversation yet"),
    (("--resume", "nope"), "no conversation 'nope'"),
    (("--continue", "--resume", "x"), "not allowed with"),
    (("run", "hi", "--resume", "x"), "no conversation 'x'"),  # a plain run carries one on too (issue 39.5)
    (("run", "hi", "--tools", "--resume", "nope"), "no conversation 'nope'"),
    (("run", "hi", "--tools", "--continue"), "no saved conversation yet"),
    (("run", ""), "the prompt is empty"),
    (("run", "  \n "), "the prompt is empty"),
])
@pytest.mark.slow  # the CLI in subprocesses
def test_bad_input_is_one_line(argv, needle, tmp_path):
    proc = localspec(*argv, home=tmp_path / "home")
    assert proc.returncode == 1 and needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.slow  # the CLI in subprocesses
def test_a_corrupt_store_is_one_line(tmp_path):
    home = tmp_path / "home"
    db(home).parent.mkdir(parents=True, mode=0o700)
    db(home).write_bytes(b"garbage" * 1000)
    db(home).chmod(0o600)  # private already: no notice about tightening it
    proc = localspec("sessions", home=home)
    assert proc.returncode == 1 and "cannot open the conversation store" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_continue_and_resume_pick_the_conversation_for_the_app(tmp_path, monkeypatch):
    """What `localspec --continue` / `--resume ID` hand to the app (the app itself is tested with Pilot)."""
    from localspec.cli import build_parser
    from localspec.commands.tui import options_from_args

    home = tmp_path / "home"
    monkeypatch.setenv("LOCALSPEC_HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    first, second = seed(home, "one", "two")
    with ConversationStore(db(home)) as store:
        store.update(first, workspace=str(ws))
    parser = build_parser()
    assert options_from_args(parser.parse_args(["--continue"])).resume == second
    opts = options_from_args(parser.parse_args(["--resume", first[:6]]))
    assert opts.resume == first and opts.workspace == ws.resolve()  # its own workspace, unless one is given
    assert options_from_args(parser.parse_args(["--resume", first, "--workspace", str(tmp_path)])).workspace \
        == tmp_path.resolve()
    assert options_from_args(parser.parse_args([])).resume is None
