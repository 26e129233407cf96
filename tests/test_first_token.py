"""The first hour's first token (issue 28, part 1), as a user meets it on the command line (subprocesses, real
llama.cpp, the tiny GGUF): `run --json` reports the time to the first token and how much of the prompt was not read
again; the system prompt and tool definitions are computed once, saved, and restored by the next process with the
same tools; a long prompt being read is shown on a terminal ("reading prompt: N of M tokens") and nowhere else;
`serve` keeps each request's tools prefix and says what it reused in OpenAI's usage field."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import ROOT, localspec

AGENT = ("--no-draft", "--tools", "--max-steps", "1", "--tool-choice", "none", "--max-tokens", "4",
         "--tool-names", "read_file,list_dir,search_text", "--threads", "1", "--approve", "never")


def run_json(*args, home: Path) -> dict:
    proc = localspec("run", *args, "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_the_tools_prefix_is_computed_once_and_restored_by_the_next_run(tiny_target, workspace, tmp_path):
    home = tmp_path / "home"
    first = run_json("list the files", "--target", tiny_target, *AGENT, "--workspace", workspace, home=home)
    assert first["time_to_first_token_s"] > 0 and first["reused_prefix_tokens"] == 0  # cold: all of it read
    saved = list((home / "cache" / "prefixes").glob("*/*.state"))
    assert len(saved) == 1  # the system prompt + these three tools, for this model

    second = run_json("what is in notes.txt?", "--target", tiny_target, *AGENT, "--workspace", workspace, home=home)
    stats = second["stats"]
    assert second["reused_prefix_tokens"] == stats["restored_prefix_tokens"] > 0  # a new process: from the file
    assert stats["prompt_tokens"] - stats["prefill_tokens"] == second["reused_prefix_tokens"]
    assert stats["prefill_tokens"] < first["stats"]["prefill_tokens"] / 3  # only the new question was read
    assert second["time_to_first_token_s"] > 0

    other = run_json("list the files", "--target", tiny_target, *AGENT[:-6], "--tool-names", "read_file",
                     "--threads", "1", "--approve", "never", "--workspace", workspace, home=home)
    assert other["reused_prefix_tokens"] == 0  # another tool set is another prefix, computed (and saved) afresh
    assert len(list((home / "cache" / "prefixes").glob("*/*.state"))) == 2


def test_run_json_reports_the_first_token_without_tools(tiny_target, tmp_path):
    out = run_json("hello", "--target", tiny_target, "--no-draft", "--max-tokens", "3", "--threads", "1",
                   home=tmp_path / "home")
    assert out["time_to_first_token_s"] > 0 and out["reused_prefix_tokens"] == 0
    assert out["stats"]["time_to_first_token_s"] > 0 and out["stats"]["estimated_speedup"] == 1.0  # nothing drafted


def _on_a_terminal(*args, home: Path) -> tuple[int, str, str]:
    """Run localspec with stderr on a pseudo-terminal (as in a shell), stdout on a pipe."""
    master, slave = pty.openpty()
    env = dict(os.environ, LOCALSPEC_HOME=str(home),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "localspec", *map(str, args)], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode()
    proc.wait(120)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_a_long_prompt_being_read_is_shown_on_a_terminal_only(tiny_target, tmp_path):
    prompt = "read this: " + "the file name path and the code data " * 40  # several hundred tokens
    code, out, err = _on_a_terminal("run", prompt, "--target", tiny_target, "--no-draft", "--max-tokens", "2",
                                    "--threads", "1", home=tmp_path / "home")
    assert code == 0, err
    assert "reading prompt: 0 of " in err and " tokens" in err
    assert err.count("reading prompt:") >= 2  # updated batch by batch, with a rate after the first batch
    assert "tok/s" in err
    assert "\r\x1b[2K[" in err or "\x1b[2K" in err.split("[")[-2]  # the line is cleared before the stats line
    assert "reading prompt" not in out  # the answer on stdout is never mixed with it
    piped = localspec("run", prompt, "--target", tiny_target, "--no-draft", "--max-tokens", "2", "--threads", "1",
                      home=tmp_path / "home")
    assert piped.returncode == 0 and "reading prompt" not in piped.stderr  # a pipe or a log: nothing


def test_the_stats_line_is_never_glued_to_the_reply(tiny_target, tmp_path):
    """`run ... 2>&1 | cat`: the reply ends its line before the statistics line starts."""
    env = dict(os.environ, LOCALSPEC_HOME=str(tmp_path / "home"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    both = subprocess.run(f"{sys.executable} -m localspec run hello --target {tiny_target} --no-draft "
                          "--max-tokens 5 --threads 1 2>&1 | cat", shell=True, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120).stdout
    lines = both.splitlines()
    stats = [i for i, line in enumerate(lines) if line.startswith("[") and "tokens/pass" in line]
    assert stats and stats[-1] == len(lines) - 1 and lines[stats[-1]].startswith("[5 tokens")
    assert all("tokens/pass" not in line for line in lines[:stats[-1]])  # nothing of it glued to the reply


@pytest.fixture
def tiny_server_with_home(tiny_target, tmp_path):
    """`localspec serve` on the tiny model with its prefix store in tmp_path/cache/prefixes, as serve opens it."""
    pytest.importorskip("openai")
    from localspec.launch.open import keep_prefixes
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.pair import load_pair
    from localspec.serve.http_app import create_app
    from localspec.serve.server import start_in_thread
    from localspec.serve.service import ChatService
    from localspec.speculative.builder import build_engine
    from localspec.speculative.decoder import GenParams
    from localspec.speculative.drafting import DraftingConfig

    home = tmp_path / "home"
    pair = load_pair(str(tiny_target), ctx=ContextSettings(n_ctx=2048, n_threads=1))
    keep_prefixes(pair, home / "cache" / "prefixes")
    service = ChatService(pair, build_engine(pair, DraftingConfig(drafters=())), model_id="tiny",
                          defaults=GenParams(max_tokens=4))
    server = start_in_thread(create_app(service))
    try:
        yield server.url, home
    finally:
        server.stop()
        service.close()


def test_serve_reuses_the_tools_prefix_and_reports_it_in_usage(tiny_server_with_home):
    """Two requests with the same tools and another in between: the second is answered from the kept prefix;
    usage.prompt_tokens equals localspec.prompt_tokens and prompt_tokens_details.cached_tokens says what was kept."""
    from tests.serve_helpers import TOOLS, client

    url, home = tiny_server_with_home
    c = client(url)
    ask = dict(model="tiny", max_tokens=3, tools=TOOLS, tool_choice="none")
    first = c.chat.completions.create(messages=[{"role": "user", "content": "turn the light on"}], **ask)
    c.chat.completions.create(messages=[{"role": "user", "content": "a question without tools"}], model="tiny",
                              max_tokens=3)
    again = c.chat.completions.create(messages=[{"role": "user", "content": "now off"}], **ask)
    forced = c.chat.completions.create(messages=[{"role": "user", "content": "red"}], model="tiny", max_tokens=40,
                                       tools=TOOLS, tool_choice="required")
    assert forced.choices[0].message.tool_calls
    for r in (first, again, forced):  # one count of the prompt, whichever field says it
        assert r.usage.prompt_tokens == r.model_extra["localspec"]["prompt_tokens"]
    cached = again.usage.prompt_tokens_details.cached_tokens
    assert cached == again.model_extra["localspec"]["reused_prefix_tokens"] > 0
    assert again.model_extra["localspec"]["restored_prefix_tokens"] == cached  # from the saved prefix, not luck
    assert list((home / "cache" / "prefixes").glob("*/*.state"))
