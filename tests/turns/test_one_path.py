"""One turn engine: the same scripted GGUF, the same conversation and tools, through the agent loop, the HTTP server
and the bench gives the same text, the same calls and the same number of target passes (each on an engine of its
own, drafting alike)."""

from __future__ import annotations

import json

import pytest

from localspec.agent import Agent, StepStats
from localspec.bench.runner import ConfigRun, case_messages
from localspec.bench.suite import Case
from localspec.launch.flags import RunFlags
from localspec.launch.run_config import resolve_config
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.serve.http_app import create_app
from localspec.serve.server import start_in_thread
from localspec.serve.service import ChatService
from localspec.speculative.builder import build_engine
from localspec.speculative.costs import CostModel
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import DraftingConfig
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.sources.past_calls import CallHistory
from localspec.tools import Policy, Toolbox
from localspec.turns import Bounds
from tests.scripted_gguf import write_scripted_gguf

openai = pytest.importorskip("openai")

SYSTEM = "You help with files."
ASK = "What is in this folder?"
# Qwen2.5: a few words, the tokenizer's own `<tool_call>` token, a call the grammar completes, then the end.
SCRIPT = ["hello", "▁world", "<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]
DRAFTING = DraftingConfig(drafters=("schema", "history", "ngram"))
MAX_TOKENS = 400  # far above what the script writes: no phase runs into a limit (the server counts one for the
# whole reply, the agent one per phase)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_scripted_gguf(tmp_path_factory.mktemp("one-path") / "q25.gguf", "qwen2.5", SCRIPT)


class FrozenCosts(CostModel):
    """The same made-up machine for all three: how far the hybrid drafts follows measured costs, which differ from
    engine to engine on a busy host; the turn itself must not."""

    def __init__(self):
        super().__init__()
        for n, rows in [(1, 1), (1, 1), (4, 4), (8, 8), (16, 16), (16, 1)]:
            super().observe(n, rows, 0.010 + 0.001 * n + 0.002 * rows)
        self._fit()

    def observe(self, n_tokens, n_rows, seconds, depth=None):
        pass


def _engine(model):
    pair = load_pair(str(model), None, ctx=ContextSettings(n_ctx=2048, n_threads=1))
    return pair, build_engine(pair, DRAFTING, history=CallHistory(), costs=FrozenCosts())


def _agent(model, tmp_path) -> tuple[str, list, int, list[dict]]:
    pair, engine = _engine(model)
    try:
        agent = Agent(engine, Toolbox(tmp_path, Policy("read-only")), system=SYSTEM,
                      params=GenParams(max_tokens=MAX_TOKENS), max_steps=1, tools=["list_dir"],
                      call_max_tokens=MAX_TOKENS)
        steps = []
        result = agent.run(ASK, on_event=lambda ev: steps.append(ev) if isinstance(ev, StepStats) else None)
        calls = [(c.name, c.arguments) for c in result.tool_calls]
        first = next(m for m in result.messages if m["role"] == "assistant")
        return first["content"], calls, steps[0].stats.target_passes, agent.tool_specs()
    finally:
        pair.close()


def _server(model, tools) -> tuple[str, list, int]:
    pair, engine = _engine(model)
    service = ChatService(pair, engine, model_id="m", defaults=GenParams(max_tokens=MAX_TOKENS))
    server = start_in_thread(create_app(service, None))
    try:
        c = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
        r = c.chat.completions.create(model="m", messages=[{"role": "system", "content": SYSTEM},
                                                           {"role": "user", "content": ASK}],
                                      tools=tools, max_tokens=MAX_TOKENS, parallel_tool_calls=True)
        msg = r.choices[0].message
        calls = [(t.function.name, json.loads(t.function.arguments)) for t in msg.tool_calls or []]
        return msg.content or "", calls, r.model_extra["localspec"]["target_passes"]
    finally:
        server.stop()
        service.close()


def _bench(model, tools, home) -> tuple[str, list, int]:
    pair = load_pair(str(model), None, ctx=ContextSettings(n_ctx=2048, n_threads=1))
    try:
        config = resolve_config(RunFlags(target=str(model)))
        run = ConfigRun(pair, config, DRAFTING.drafters, max_tokens=MAX_TOKENS, bounds=Bounds(), costs=FrozenCosts())
        case = Case(id="one", category="parallel",  # more calls may follow: the probe, as the agent runs it
                    messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": ASK}], tools=tools)
        assert case_messages(case) == case.messages
        r = run.run(case)
        return r.text, [(c["name"], c["arguments"]) for c in r.calls], r.passes
    finally:
        pair.close()


def test_agent_server_and_bench_run_the_same_turn(model, tmp_path, home):
    text, calls, passes, tools = _agent(model, tmp_path)
    # (After the call the grammar spells `</tool_call>` as text, which the script does not know: in the probe the
    # model writes its script again, and its repeat of the call is dropped.)
    assert text.startswith("hello world") and [name for name, _ in calls] == ["list_dir"] and passes > 0
    assert _server(model, tools) == (text, calls, passes)
    assert _bench(model, tools, home) == (text, calls, passes)
    assert SamplingParams().greedy  # all three greedy, as the bench always is
