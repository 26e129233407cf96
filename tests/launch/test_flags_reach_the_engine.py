"""Every model, drafting and sampling flag reaches the engine in every front end: `run`, `run --tools`, `serve`, the
app and `bench` each parse it, resolve it once (launch/run_config.py) and open the pair and engine with it
(launch/open.py). The test runs each front end for real on the tiny pair and looks at what it built: the loaded
models and contexts, the drafter, and the parameters the first generation ran with."""

from __future__ import annotations

from pathlib import Path

import pytest

from localspec.runtime.llama import lib
from localspec.speculative import builder
from localspec.speculative.decoder import SpecEngine
from localspec.speculative.policy.hybrid import HybridDrafter
from tests.cli_helpers import one_call_suite

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" \
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"


def built(pair, engine) -> dict:
    """What a front end built, read as it is built (serve frees its pair when it stops)."""
    drafter = engine.drafter
    model = drafter.model if isinstance(drafter, HybridDrafter) else drafter
    return {"n_ctx": pair.target_ctx.n_ctx, "threads": lib.llama_n_threads(pair.target_ctx.ptr),
            "gpu_layers": pair.target.settings.n_gpu_layers,
            "draft_gpu_layers": pair.draft.settings.n_gpu_layers if pair.draft else None,
            "flash_attn": pair.target_ctx.settings.flash_attn, "template": pair.target.chat_template,
            "drafter": None if drafter is None else type(drafter).__name__,
            "sources": [type(s).__name__ for s in getattr(drafter, "sources", ())],
            "model": None if model is None else (model.max_len, model.p_min),
            "model_kind": None if model is None else type(model).__name__, "translated": engine.translated}


# flag arguments, what must hold of (what was built, the first generation's parameters), which front ends take them
MODEL = ("run", "tools", "serve", "app", "bench")
SAMPLING = ("run", "tools", "serve", "app")
CASES = [
    (["--ctx-size", "1280"], lambda b, g: b["n_ctx"] == 1280, MODEL),
    (["--threads", "1"], lambda b, g: b["threads"] == 1, MODEL),
    (["--n-gpu-layers", "0"], lambda b, g: b["gpu_layers"] == 0, MODEL),
    (["--draft-n-gpu-layers", "0"], lambda b, g: b["draft_gpu_layers"] == 0, MODEL),
    (["--flash-attn", "off"], lambda b, g: b["flash_attn"] == "off", MODEL),
    (["--chat-template", "{template}"], lambda b, g: b["template"] == TEMPLATE, MODEL),
    (["--no-draft"], lambda b, g: b["drafter"] is None and b["draft_gpu_layers"] is None, SAMPLING),
    (["--drafters", "schema"],
     lambda b, g: (b["drafter"], b["sources"], b["model"]) == ("HybridDrafter", ["ToolNameDrafter"], None), SAMPLING),
    (["--drafters", "model,ngram", "--draft-max", "3"], lambda b, g: b["model"][0] == 3, SAMPLING),
    (["--drafters", "model", "--draft-p-min", "0.4"], lambda b, g: b["model"][1] == 0.4, SAMPLING),
    (["--temperature", "0.5", "--seed", "3"], lambda b, g: (g.sampling.temperature, g.sampling.seed) == (0.5, 3),
     SAMPLING),
    (["--top-k", "7", "--top-p", "0.5", "--min-p", "0.1"],
     lambda b, g: (g.sampling.top_k, g.sampling.top_p, g.sampling.min_p) == (7, 0.5, 0.1), SAMPLING),
    (["--max-tokens", "3"], lambda b, g: g.max_tokens == 3, SAMPLING),
    (["--stop", "zq"], lambda b, g: "zq" in g.stop, SAMPLING),
]


class Seen:
    """What the front end built: every engine (with its pair) and the parameters of every generation."""

    def __init__(self, monkeypatch):
        self.engines: list[dict] = []
        self.params: list = []
        real_build, real_stream = builder.build_engine, SpecEngine.stream
        seen = self

        def build(pair, *a, **kw):
            engine = real_build(pair, *a, **kw)
            seen.engines.append(built(pair, engine))
            return engine

        def stream(engine, prompt, params=None, **kw):
            seen.params.append(params)
            return real_stream(engine, prompt, params, **kw)

        for module in ("localspec.speculative.builder", "localspec.launch.open", "localspec.bench.runner"):
            monkeypatch.setattr(f"{module}.build_engine", build)
        monkeypatch.setattr(SpecEngine, "stream", stream)


def _run_cli(argv: list[str]) -> None:
    from localspec.cli import main

    assert main(argv) == 0


def _front_end(name: str, target: Path, draft: Path, flags: list[str], tmp_path: Path, monkeypatch, seen: Seen):
    pair_args = ["--target", str(target)] + ([] if "--no-draft" in flags else ["--draft", str(draft)])
    if name == "run":
        _run_cli(["run", "hi", *pair_args, "--max-tokens", "2", "--json", *flags])
    elif name == "tools":
        _run_cli(["run", "hi", "--tools", "--workspace", str(tmp_path), "--approve", "never", "--no-transcript",
                  "--max-steps", "1", "--max-tokens", "2", "--call-max-tokens", "4", "--tool-names", "list_dir", "--json",
                  *pair_args, *flags])
    elif name == "serve":
        services = []
        monkeypatch.setattr("localspec.serve.server.serve_forever", lambda app, host, port: None)
        import localspec.serve.service as service_mod

        real_init = service_mod.ChatService.__init__

        def init(self, *a, **kw):
            real_init(self, *a, **kw)
            services.append(self)

        monkeypatch.setattr(service_mod.ChatService, "__init__", init)
        _run_cli(["serve", *pair_args, "--port", "0", *flags])
        seen.params.append(services[0].defaults)  # a request that leaves a setting out gets these
    elif name == "app":
        from localspec.cli import build_parser
        from localspec.commands.tui import options_from_args
        from localspec.tui.session import ChatSession

        options = options_from_args(build_parser().parse_args([*pair_args, "--workspace", str(tmp_path), *flags]))
        options.record = False
        session = ChatSession(options)
        session.load(session.initial_selection())
        try:
            seen.params.append(session.agent.params)
        finally:
            session.shutdown()
    elif name == "bench":
        suite = one_call_suite(tmp_path)
        _run_cli(["bench", str(suite), *pair_args, "--configs", "baseline,all", "--max-tokens", "4", "--json",
                  *flags])


# Every front end loads its pair again for every flag: the fast tier keeps `run` with two flags (one the pair's
# loading takes, one a generation takes); the whole table is the slow tier's.
FAST = {("run", "--threads 1"), ("run", "--max-tokens 3")}


@pytest.mark.parametrize("front_end, flags, holds, takes", [
    pytest.param(front_end, *case, id=f"{' '.join(case[0])}-{front_end}",
                 marks=() if (front_end, " ".join(case[0])) in FAST else pytest.mark.slow)
    for case in CASES for front_end in MODEL])
def test_each_flag_reaches_the_engine(front_end, flags, holds, takes, tiny_pair_paths, tmp_path, home,
                                      monkeypatch, capsys):
    if front_end not in takes:
        pytest.skip(f"{front_end} does not take {flags[0]}")
    template = tmp_path / "t.jinja"
    template.write_text(TEMPLATE)
    flags = [f.replace("{template}", str(template)) for f in flags]
    seen = Seen(monkeypatch)
    _front_end(front_end, *tiny_pair_paths, flags, tmp_path, monkeypatch, seen)
    capsys.readouterr()
    assert seen.engines, "no engine was built"
    engine = seen.engines[-1]  # bench: the last config's ("all"), the one that drafts with every source
    params = seen.params[0] if seen.params else None
    assert holds(engine, params), (front_end, flags, engine, params)


@pytest.mark.parametrize("front_end", [pytest.param(f, marks=() if f == "run" else pytest.mark.slow) for f in MODEL])
def test_every_front_end_runs_a_draft_of_another_family(front_end, tiny_pair_paths, tiny_other_vocab, tmp_path,
                                                       home, monkeypatch, capsys):
    """A pair of two families loads instead of being refused, and its draft drafts through text (issue 36)."""
    seen = Seen(monkeypatch)
    flags = [] if front_end == "bench" else ["--drafters", "model,ngram"]  # bench: its "all" config
    _front_end(front_end, tiny_pair_paths[0], tiny_other_vocab, flags, tmp_path, monkeypatch, seen)
    capsys.readouterr()
    engine = seen.engines[-1]
    assert engine["translated"] and engine["model_kind"] == "TranslatedDrafter", engine
