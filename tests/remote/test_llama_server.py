"""The remote backend against a real llama-server, built from the llama.cpp that llama-cpp-python vendors
(scripts/llama_server.py; CI builds it into a cache and sets LOCALSPEC_LLAMA_SERVER), serving SmolLM2-135M:
`run --tools` runs the agent loop with its turns there, `backend.kind` in config.toml chooses it for `run`, the app
connects to it and shows what it reports, and `serve --backend openai` answers its own clients through it.

(llama-server 0.3.36 renders SmolLM2's tool definitions but does not hold this 135M model to a call, even with
tool_choice "required": calls, approvals and MCP tools over the remote backend are tested against localspec's own
server in tests/remote/test_turns.py.)"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import localspec
from tests.serve_helpers import client, free_port, wait_until_healthy

httpx = pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
QWEN_TEMPLATE = ROOT / "localspec" / "data" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"  # ChatML, with tools

pytestmark = pytest.mark.slow


def llama_server_binary() -> Path:
    """LOCALSPEC_LLAMA_SERVER (CI: must exist), else the cache scripts/llama_server.py builds into, else skip."""
    given = os.environ.get("LOCALSPEC_LLAMA_SERVER")
    if given:
        if not Path(given).is_file():
            pytest.fail(f"LOCALSPEC_LLAMA_SERVER={given}: no such file (CI builds it: scripts/llama_server.py)")
        return Path(given)
    spec = importlib.util.spec_from_file_location("llama_server_build", ROOT / "scripts" / "llama_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = module.binary_path()
    if not found.is_file():
        pytest.skip("no llama-server built yet: python scripts/llama_server.py (several minutes; CI does it)")
    return found


@pytest.fixture(scope="module")
def llama_server(smollm2, tmp_path_factory):
    binary = llama_server_binary()
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    proc = subprocess.Popen([str(binary), "-m", str(smollm2), "--host", "127.0.0.1", "--port", str(port),
                             "-c", "4096", "-t", "2", "-np", "1", "--jinja", "--chat-template-file",
                             str(QWEN_TEMPLATE), "-a", "smollm2"],
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama-server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.fixture
def workspace_files():
    return {"notes.txt": "buy milk\n"}


def test_the_agent_loop_runs_its_turns_on_llama_server(llama_server, workspace, tmp_path):
    proc = localspec("run", "What is in notes.txt?", "--tools", "--backend", "openai", "--base-url", llama_server,
                     "--workspace", workspace, "--approve", "never", "--max-steps", "1", "--max-tokens", "12",
                     "--tool-names", "read_file,list_dir", "--json", home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["backend"] == "openai" and out["model"] == "smollm2" and out["target"] is None
    assert out["steps"] == 1 and out["stats"]["generated_tokens"] > 0
    stats = out["stats"]
    assert stats["source"] == "llama-server"  # the figures are the server's own timings
    assert stats["prompt_tokens"] > 150  # the two tool definitions reached the server's prompt
    assert stats["estimated_speedup"] is None  # llama-server without a draft model reports none: not guessed
    assert out["time_to_first_token_s"] > 0
    conv = json.loads(localspec("sessions", "--json", home=tmp_path / "home").stdout)[0]
    assert conv["params"]["backend"] == "openai" and conv["params"]["base_url"] == llama_server


def test_config_chooses_the_backend_for_run(llama_server, tmp_path):
    home = tmp_path / "home"
    for key, value in (("backend.kind", "openai"), ("backend.base_url", llama_server)):
        assert localspec("config", "set", key, value, home=home).returncode == 0
    proc = localspec("run", "Say hi", "--max-tokens", "6", "--json", home=home)  # no flag: config.toml says where
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["backend"] == "openai" and out["base_url"] == llama_server and out["usage"]["completion_tokens"] > 0
    plain = localspec("run", "Say hi", "--max-tokens", "6", home=home)
    assert plain.returncode == 0 and plain.stdout.strip()
    assert "reports none" in plain.stderr  # no draft model there: said so, not shown as 0% or 1.00x


def test_serve_answers_its_clients_through_llama_server(llama_server, tmp_path):
    port = free_port()
    env = dict(os.environ, LOCALSPEC_HOME=str(tmp_path / "home"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "localspec", "serve", "--backend", "openai", "--base-url",
                             llama_server, "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, proc)
        assert [m.id for m in client(url).models.list().data] == ["smollm2"]  # the backend's model, by its name
        r = client(url).chat.completions.create(model="smollm2", max_tokens=6,
                                                messages=[{"role": "user", "content": "Say hi"}])
        assert r.choices[0].message.content and r.usage.completion_tokens > 0
        assert r.model_extra["localspec"]["source"] == "llama-server"
        chunks = list(client(url).chat.completions.create(model="smollm2", max_tokens=6, stream=True,
                                                          messages=[{"role": "user", "content": "Say hi"}]))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.mark.anyio
async def test_the_app_connects_and_shows_what_the_server_reports(llama_server, tmp_path, monkeypatch):
    from localspec.tui.app import LocalspecApp
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.widgets.stats_panel import StatsPanel
    from tests.tui_helpers import wait_for

    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(f'[backend]\nkind = "openai"\nbase_url = "{llama_server}"\n')
    monkeypatch.setenv("LOCALSPEC_HOME", str(home))
    app = LocalspecApp(AppOptions(workspace=tmp_path, tool_choice="none", record=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.session.loaded, 60, "the connection")
        assert app.session.info.remote == llama_server and "smollm2 @ 127.0.0.1" in app.session.info.label
        prompt = app.chat.query_one("#prompt")
        prompt.value = "Say hi"
        app.simulate_key("enter")
        await wait_for(pilot, lambda: app.session.totals.turns == 1 and not app.chat.busy, 120, "the reply")
        view = app.chat.query_one(StatsPanel).view
        assert view.source == "llama-server" and view.generated > 0 and view.estimated_speedup is None


@pytest.fixture
def anyio_backend():
    return "asyncio"
