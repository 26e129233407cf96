"""The app with MCP servers (--mcp-config): a failing server is a notice, an MCP write asks in the approval modal
(server, tool, arguments), the tools screen (F5) lists servers with their state and tools and switches one off for
the session, and quitting stops the server processes. Real tiny GGUF pair, real test server."""

from __future__ import annotations

import time
import uuid

import pytest

from localspec.launch.flags import RunFlags
from localspec.tui.app import LocalspecApp
from localspec.tui.launch_options import AppOptions
from localspec.tui.screens.approval import ApprovalScreen
from localspec.tui.screens.tools import ToolsScreen
from localspec.tui.widgets.toolcard import ToolCard
from tests.mcp.conftest import stdio_server, write_mcp_config
from tests.mcp.test_servers import proc_cmdlines_with
from tests.tui_helpers import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.anyio]  # the app driven end to end (Pilot, real llama.cpp)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def chat_pair(tmp_path_factory):
    """The tiny pair with an 8K context (the app's system prompt and tool list need more than 2K tokens)."""
    from localspec.runtime.tinymodel import write_tiny_llama

    d = tmp_path_factory.mktemp("mcp-tui-pair")
    target = write_tiny_llama(d / "t.gguf", n_ctx_train=8192)
    draft = write_tiny_llama(d / "d.gguf", base=target, noise=0.6, n_layer=1, seed=1)
    return target, draft


async def test_app_with_mcp_servers(chat_pair, tmp_path, monkeypatch, notes):
    home = tmp_path / "home"
    monkeypatch.setenv("LOCALSPEC_HOME", str(home))
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("[sampling]\ntemperature = 0.0\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tag = uuid.uuid4().hex
    cfg = write_mcp_config(tmp_path / "mcp.json", {"notes": stdio_server(notes, "--tag", tag),
                                                   "broken": stdio_server(notes, "--mode", "fail-start")})
    target, draft = chat_pair
    app = LocalspecApp(AppOptions(flags=RunFlags(target=str(target), draft=str(draft), max_tokens=30, ctx_size=8192), workspace=workspace, tool_choice="write_note", mcp_config=cfg))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.session.loaded and app.screen is app.chat, what="the pair to load")
        await wait_for(pilot, lambda: any("'broken'" in n.message for n in app._notifications), 30,
                       "the notice about the broken server")
        notice = next(n.message for n in app._notifications if "'broken'" in n.message)
        assert "failed to start" in notice and "\n" not in notice

        prompt = app.chat.query_one("#prompt")
        prompt.focus()
        prompt.value = "save a note"
        app.simulate_key("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#deny_once")),
                       what="the approval modal")
        request = app.screen.request
        assert request.tool == "write_note" and set(request.arguments) == {"name", "text"}
        assert "MCP notes: write_note" in request.summary
        app.simulate_key("y")
        await wait_for(pilot, lambda: not app.chat.busy and not isinstance(app.screen, ApprovalScreen),
                       what="the turn to finish")
        card = app.chat.query(ToolCard).first()
        assert (card.status == "ok" and card.result.startswith("saved ")) or \
            (card.status == "failed" and "bad note name" in card.result), card.result  # the server's answer

        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ToolsScreen), 10, "the tools screen")
        screen = app.screen
        servers = screen.query_one("#servers")
        rows = {str(servers.get_row(k)[0]): str(servers.get_row(k)[1]) for k in servers.rows}
        assert rows == {"notes": "running", "broken": "failed"}
        tools = screen.query_one("#tool-list")
        names = {str(tools.get_row(k)[0]): str(tools.get_row(k)[1]) for k in tools.rows}
        assert names["write_note"] == "mcp:notes" and names["read_file"] == "builtin"
        servers.move_cursor(row=0)
        await pilot.press("space")
        await wait_for(pilot, lambda: "write_note" not in app.session.toolbox.names(), 30, "the server to stop")
        await wait_for(pilot, lambda: str(servers.get_row("notes")[1]) == "off", 5, "the table to show it off")
        assert proc_cmdlines_with(tag) == []  # switched off = its process stopped
        await pilot.press("space")
        await wait_for(pilot, lambda: "write_note" in app.session.toolbox.names(), 30, "the server to restart")
        assert len([c for c in proc_cmdlines_with(tag) if "reaper.py" not in c]) == 1  # (under its wrapper)
        await pilot.press("escape")
        assert app.screen is app.chat
    deadline = time.monotonic() + 10
    while proc_cmdlines_with(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc_cmdlines_with(tag) == []  # quitting the app stops the servers
