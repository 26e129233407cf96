"""The app with a reasoning model (Pilot, real llama.cpp): the thinking shows as a block that folds away when the
answer starts, with its own token count and speed; Ctrl+R switches thinking off. The model is a scripted GGUF with
the real Qwen3 template (tests/scripted_gguf.py)."""

from __future__ import annotations

import pytest

from localspec.launch.flags import RunFlags
from localspec.tui.app import LocalspecApp
from localspec.tui.launch_options import AppOptions
from localspec.tui.widgets.reasoning import ReasoningBlock, reasoning_title
from tests.scripted_gguf import QWEN3_ANSWER, write_scripted_gguf
from tests.tui_helpers import messages, ready, send, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.anyio]  # the app driven end to end (Pilot, real llama.cpp)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def test_titles():
    assert reasoning_title(1, None, False) == "Thinking… 1 token"
    assert reasoning_title(42, 2.0, True) == "Thought for 2.0 s · 42 tokens · 21.0 tok/s"


async def test_reasoning_block_folds_when_the_answer_starts(tmp_path, home):
    write_config(home, "[sampling]\ntemperature = 0.0\n")
    model = write_scripted_gguf(tmp_path / "qwen3.gguf", "qwen3", QWEN3_ANSWER)
    ws = tmp_path / "ws"
    ws.mkdir()
    app = LocalspecApp(AppOptions(flags=RunFlags(target=str(model), max_tokens=40, ctx_size=4096), workspace=ws))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: not app.chat.busy, what="the reply")
        blocks = list(app.chat.query(ReasoningBlock))
        assert len(blocks) == 1
        block = blocks[0]
        assert (block.text, block.done, block.collapsed) == ("what is it", True, True)
        assert block.title.startswith("Thought") and "tok/s" in block.title and block.tokens > 0
        assert messages(app, "assistant")[-1].text == "hello world"
        assert app.session.history[-1] == {"role": "assistant", "content": "hello world",
                                           "reasoning_content": "what is it"}
        assert app.session.thinking
        await pilot.press("ctrl+r")
        assert not app.session.thinking and not app.session.agent.thinking
