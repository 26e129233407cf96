"""No raw control text reaches a terminal (issue 27): every class of terminal control sequence, put into stored
conversations, a model's output, a remote server's answer and an MCP server's descriptions, is pushed through each
output path (CLI commands in a pseudo-terminal; the app's rendered bytes), and none arrives raw. Each path must
also show the payload escaped, so a test that printed nothing could not pass.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from localspec.conversations import ConversationStore
from localspec.terminal import display_text, hidden, safe_json, safe_text
from tests.scripted_gguf import write_scripted_gguf
from tests.tui_helpers import settle, wait_for

ROOT = Path(__file__).resolve().parent.parent

# One of each class the issue names, each with a marker word so its escaped form can be found in the output.
PAYLOADS = {
    "colour": "\x1b[31mREDTEXT\x1b[0m",
    "clear": "\x1b[2J\x1b[HCLEARED\x1bc",
    "title": "\x1b]0;OWNEDTITLE\x07",
    "clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "hyperlink": "\x1b]8;;http://evil.example/\x1b\\CLICKME\x1b]8;;\x1b\\",
    "c1": "\x9b31mCSIONE\x9d0;C1TITLE\x9c\x90DCS\x9c",
    "erase": "visible\x1b[2K\x1b[1GFORGED\x08\x08\rCR",
    "bidi": "\u202eREVERSED\u202c\u2066ISOLATE\u2069\u200fRLM",
    "bell": "\x07\x7fDEL",
    "markup": "[bold]MARKUP[/bold][@click=app.quit]QUIT[/]",  # Textual markup: shown as written, never applied
}
PAYLOAD = " ".join(f"<{name}:{text}>" for name, text in PAYLOADS.items())
MARKERS = ["REDTEXT", "CLEARED", "OWNEDTITLE", "cm0gLXJmIH4=", "CLICKME", "CSIONE", "FORGED", "REVERSED", "DEL"]
# What the program itself may send: SGR colours (the dim [thinking] prefix on a terminal), the "reading prompt"
# line rewritten in place (CR, erase line: commands/console.py) and, in the app, Textual's cursor moves. Everything
# else that is a control character came from the payload.
OWN_SEQUENCES = re.compile(r"\r\x1b\[2K|\x1b\[[0-9;]*[mH]")


def raw_controls(output: str) -> list[str]:
    """The control or invisible characters left in `output` once the program's own sequences are removed."""
    text = OWN_SEQUENCES.sub("", output.replace("\r\n", "\n"))
    return sorted({f"U+{ord(ch):04X}" for ch in text if ch not in "\n\t\u200c\u200d" and hidden(ch)})


def assert_clean(output: str, *, markers=MARKERS) -> None:
    assert raw_controls(output) == [], raw_controls(output)
    missing = [m for m in markers if m not in output]
    assert not missing, f"the payload did not come through this path: {missing}\n{output[:3000]}"
    assert "\\x1b" in output or "\\u001b" in output, "the escapes are not shown"


def test_the_rule_escapes_every_class():
    for name, text in PAYLOADS.items():
        for shown in (safe_text(text), display_text(text), safe_json(text)):
            assert raw_controls(shown) == [], (name, shown)
    assert json.loads(safe_json({"k": PAYLOAD})) == {"k": PAYLOAD}  # JSON keeps the value, only its spelling changes
    assert display_text("a\u200db\u200cc\n\td") == "a\u200db\u200cc\n\td"  # joiners and lines of prose stay
    assert safe_text("\u200d") == "\\u200d"  # approvals show even those


def run_in_pty(argv: list[str], env: dict, timeout: float = 120) -> tuple[int, str]:
    """Run `python -m localspec ARGV` with stdout and stderr on a pseudo-terminal; (exit code, everything shown)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "localspec", *argv], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, env=env, cwd=env.get("HOME", str(ROOT)), close_fds=True)
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise AssertionError(f"{argv} produced nothing for {timeout}s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    code = proc.wait(timeout)
    return code, b"".join(chunks).decode("utf-8", "surrogateescape")


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALSPEC_") or k == "LOCALSPEC_TEST_CACHE"}
    env.update(LOCALSPEC_HOME=str(home), PYTHONPATH=str(ROOT), HOME=str(tmp_path), TERM="xterm-256color")
    return env


def seed(home: Path) -> str:
    """A conversation with the payload in its title, messages, reasoning, tool calls and tool results."""
    with ConversationStore(home / "data" / "conversations.sqlite3") as store:
        cid = store.create(title=PAYLOAD, pair="pair" + PAYLOADS["title"], workspace="/ws" + PAYLOADS["bidi"],
                           system="system " + PAYLOAD)
        store.add_message(cid, {"role": "user", "content": "question " + PAYLOAD})
        store.add_message(cid, {"role": "assistant", "content": "", "reasoning_content": "thinking " + PAYLOAD,
                                "tool_calls": [{"id": "c1", "type": "function", "function": {
                                    "name": "read" + PAYLOADS["c1"], "arguments": json.dumps({"path": PAYLOAD})}}]})
        store.add_message(cid, {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": PAYLOAD})
        store.add_message(cid, {"role": "assistant", "content": "answer " + PAYLOAD})
        for name, text in PAYLOADS.items():  # titles are cut at 60 characters: one conversation per class
            other = store.create(title=f"{name} {text}", pair=name + text[:12])
            store.add_message(other, {"role": "user", "content": text})
    return cid


@pytest.mark.parametrize("argv", [
    ["sessions"], ["sessions", "--json"], ["sessions", "show", "{id}"], ["sessions", "show", "{id}", "--json"],
    ["sessions", "--search", " "],
])
@pytest.mark.slow  # the CLI in subprocesses
def test_sessions_commands_show_stored_text_escaped(env, argv):
    cid = seed(Path(env["LOCALSPEC_HOME"]))
    code, out = run_in_pty([a.replace("{id}", cid) for a in argv], env)
    assert code == 0, out
    assert_clean(out)


@pytest.mark.slow  # the CLI, the app or MCP servers end to end
def test_sessions_rename_delete_export_and_errors_escape_too(env):
    cid = seed(Path(env["LOCALSPEC_HOME"]))
    code, out = run_in_pty(["sessions", "rename", cid, "new " + PAYLOAD], env)
    assert code == 0 and "renamed" in out
    assert_clean(out)
    code, out = run_in_pty(["sessions", "show", "nope" + PAYLOADS["title"] + PAYLOADS["c1"]], env)
    assert code == 1 and "error:" in out and raw_controls(out) == [], out
    code, out = run_in_pty(["sessions", "delete", cid, "--yes"], env)  # --yes: delete asks first (issue 28)
    assert code == 0
    assert_clean(out, markers=["REDTEXT", "OWNEDTITLE"])


class _Hostile(BaseHTTPRequestHandler):
    """An OpenAI-compatible server whose every answer (streamed or not) is the payload."""

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for piece in [PAYLOAD[i:i + 7] for i in range(0, len(PAYLOAD), 7)]:
                chunk = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
            return
        data = json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": PAYLOAD}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self.send_error(404)

    def log_message(self, *a):
        pass


@pytest.mark.parametrize("json_output", [False, True])
@pytest.mark.slow  # the CLI in subprocesses
def test_run_with_an_openai_backend_shows_the_servers_text_escaped(env, json_output):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        code, out = run_in_pty(["run", "hi", "--backend", "openai", "--base-url", url, "--model", "m",
                                *(["--json"] if json_output else [])], env)
    finally:
        server.shutdown()
    assert code == 0, out
    assert_clean(out)


# A reasoning model whose thinking and answer carry raw control bytes (each byte token once: the script's rule).
SCRIPT = ["<think>", "<0x1B>", "]", "what", "<0x07>", "</think>", "<0xC2>", "<0x9B>", "hello", "<0xE2>", "<0x80>",
          "<0xAE>", "▁world", "<|im_end|>"]


@pytest.fixture(scope="module")
def hostile_model(tmp_path_factory):
    return write_scripted_gguf(tmp_path_factory.mktemp("hostile") / "q.gguf", "qwen3", SCRIPT)


@pytest.mark.slow  # the CLI, the app or MCP servers end to end
@pytest.mark.parametrize("extra", [[], ["--json"], ["--tools", "--tool-choice", "none", "--approve", "never"]])
def test_run_with_a_local_model_shows_its_output_escaped(env, hostile_model, extra):
    code, out = run_in_pty(["run", "hi", "--target", str(hostile_model), "--max-tokens", "20",
                            "--temperature", "0", *extra], env)
    assert code == 0, out
    assert_clean(out, markers=["what", "hello", "world"])
    assert "\\x1b]what" in out or "\\u001b]what" in out  # the model's ESC, shown


def hostile_mcp_config(tmp_path: Path) -> Path:
    """An MCP server whose tool descriptions (and an unusable schema's $ref) carry the control sequences."""
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    server = ROOT / "tests" / "mcp" / "server.py"
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"shady": {"command": sys.executable, "args": [
        str(server), "--dir", str(notes), "--hostile-text"]}}}))
    return cfg


@pytest.mark.slow  # the CLI, the app or MCP servers end to end
@pytest.mark.parametrize("json_output", [False, True])
def test_tools_shows_mcp_descriptions_and_ref_text_escaped(env, tmp_path, json_output):
    code, out = run_in_pty(["tools", "--mcp-config", str(hostile_mcp_config(tmp_path)),
                            *(["--json"] if json_output else [])], env)
    assert code == 0, out
    assert_clean(out, markers=["REDTEXT", "OWNEDTITLE"] if not json_output else
                 ["REDTEXT", "OWNEDTITLE", "CLICKME", "CSIONE", "CLEARED", "REVERSED"])
    assert "broken_ref" in out  # the tool left out, its $ref quoted in the note: escaped too


# ---- the app: its rendered bytes -----------------------------------------------------------------------------------

def rendered(app) -> str:
    """What the app would write to the terminal for the whole screen now (Textual's own compositor output)."""
    return app.screen._compositor.render_update(full=True).render_segments(app.console)


async def expand_all(pilot) -> None:
    from textual.widgets import Collapsible

    for block in pilot.app.screen.query(Collapsible):
        block.collapsed = False
    await settle(pilot)


async def shows(pilot, markers: list[str]) -> str:
    """The rendered screen once every marker is on it (each is checked by assert_clean next)."""
    await wait_for(pilot, lambda: all(m in rendered(pilot.app) for m in markers), 10, f"{markers} on the screen")
    return rendered(pilot.app)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.slow  # the CLI, the app or MCP servers end to end
@pytest.mark.anyio
async def test_the_app_renders_stored_and_streamed_text_escaped(tmp_path, monkeypatch):
    from localspec.launch.flags import RunFlags
    from localspec.runtime.tinymodel import write_tiny_llama
    from localspec.tui.app import LocalspecApp
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.messages import TurnUpdate
    from localspec.tui.screens.export import ExportScreen
    from localspec.tui.screens.sessions import SessionsScreen
    from localspec.agent import Notice
    from localspec.tui.turn import TextChunk

    home = tmp_path / "home"
    monkeypatch.setenv("LOCALSPEC_HOME", str(home))
    cid = seed(home)
    target = write_tiny_llama(tmp_path / "t.gguf", n_ctx_train=8192)
    app = LocalspecApp(AppOptions(flags=RunFlags(target=str(target), max_tokens=4, ctx_size=8192), workspace=tmp_path,
                                  resume=cid))
    async with app.run_test(size=(160, 200)) as pilot:
        await wait_for(pilot, lambda: app.session.loaded and app.screen is app.chat, 15, "the pair")
        # Resumed messages, reasoning, tool cards (expanded), the toast naming the conversation.
        markers = ["REDTEXT", "CLEARED", "OWNEDTITLE", "CLICKME", "REVERSED", "[bold]MARKUP[/bold]"]
        await wait_for(pilot, lambda: app.chat.chat_log.messages(), 10, "the resumed conversation")
        await expand_all(pilot)
        assert_clean(await shows(pilot, markers), markers=markers)
        # The streaming reasoning block, a streamed answer and a notice, as a live turn posts them.
        chat = app.chat
        await chat.on_turn_update(TurnUpdate(TextChunk(runs=(("target", "live " + PAYLOAD),), kind="reasoning",
                                                       tokens=3)))
        await expand_all(pilot)
        shown = rendered(app)
        assert_clean(shown, markers=["live"])
        await chat.on_turn_update(TurnUpdate(TextChunk(runs=(("target", "streamed " + PAYLOAD),), tokens=3)))
        await chat.on_turn_update(TurnUpdate(Notice(1, "notice " + PAYLOAD)))
        assert_clean(await shows(pilot, ["streamed", "notice"]), markers=["streamed", "notice"])
        # The saved conversations screen (F4): titles and pairs.
        app.action_sessions()
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen), 10, "the conversations screen")
        markers = ["REDTEXT", "OWNEDTITLE", "[bold]MARKUP[/bold][@click=app.quit]"]
        assert_clean(await shows(pilot, markers), markers=markers)
        app.pop_screen()
        await wait_for(pilot, lambda: app.screen is app.chat, 10, "the chat")
        # The export dialog names the conversation.
        chat.action_save_transcript()
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), 10, "the export dialog")
        assert_clean(await shows(pilot, ["REDTEXT"]), markers=["REDTEXT"])


@pytest.mark.slow  # the CLI, the app or MCP servers end to end
@pytest.mark.anyio
async def test_the_apps_tools_screen_shows_mcp_text_escaped(tmp_path, monkeypatch):
    from localspec.launch.flags import RunFlags
    from localspec.runtime.tinymodel import write_tiny_llama
    from localspec.tui.app import LocalspecApp
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.screens.tools import ToolsScreen

    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path / "home"))
    target = write_tiny_llama(tmp_path / "t.gguf", n_ctx_train=8192)
    app = LocalspecApp(AppOptions(flags=RunFlags(target=str(target), max_tokens=4, ctx_size=8192), workspace=tmp_path,
                                  mcp_config=hostile_mcp_config(tmp_path)))
    async with app.run_test(size=(220, 60)) as pilot:
        await wait_for(pilot, lambda: app.session.loaded and "shiny" in app.session.toolbox.names(), 30,
                       "the pair and the MCP server's tools")
        app.action_tools()
        await wait_for(pilot, lambda: isinstance(app.screen, ToolsScreen), 10, "the tools screen")
        assert_clean(await shows(pilot, ["REDTEXT", "OWNEDTITLE"]), markers=["REDTEXT", "OWNEDTITLE"])  # the description column and the notice
