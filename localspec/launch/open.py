"""Open a RunConfig's pair and build its engine: the one way every front end gets a model running."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localspec.launch.run_config import RunConfig
from localspec.models.paths import get_paths
from localspec.private_files import report
from localspec.prompting.template_file import apply_chat_template
from localspec.runtime.pair import LoadedPair, load_pair
from localspec.runtime.prefixes import PrefixStore, Wanted, model_key
from localspec.speculative import (
    CallHistory,
    CostModel,
    DraftingConfig,
    GenerationLog,
    SpanMemory,
    SpecEngine,
    build_engine,
)


@dataclass
class Opened:
    config: RunConfig
    pair: LoadedPair
    engine: SpecEngine
    warning: str | None = None  # e.g. the model has no chat template: ChatML stands in

    def close(self) -> None:
        self.pair.close()


def open_pair(config: RunConfig) -> tuple[LoadedPair, str | None]:
    """Load the config's target and draft with their settings and give the target its chat template. Returns the
    pair and the warning to show when ChatML stands in for a missing template."""
    sel = config.selection
    pair = load_pair(sel.target, sel.draft, target=config.target, draft=config.draft, ctx=config.context,
                     heads=config.drafting.uses_heads, head_path=sel.head, mtp=config.drafting.mtp)
    try:
        # Before any engine or agent exists: they read the template (tool-call format, prompts).
        warning = apply_chat_template(pair.target, config.chat_template)
        if config.prefix_cache:
            keep_prefixes(pair)
    except BaseException:
        pair.close()
        raise
    return pair, warning


def keep_prefixes(pair: LoadedPair, folder: Path | None = None) -> None:
    """Give the pair's contexts a store of saved prompt prefixes (runtime/prefixes.py) in the cache folder: one
    folder per model file and context layout, one list of wanted prefixes for both (they see the same prompts)."""
    from importlib.metadata import version  # llama.cpp's version is part of a state's identity

    cache = get_paths().cache_dir
    folder = folder or cache / "prefixes"
    wanted = Wanted()
    for ctx in (pair.target_ctx, pair.draft_ctx):
        if ctx is None:
            continue
        s = ctx.settings
        key = model_key(ctx.model.path, version("llama_cpp_python"), s.flash_attn, s.swa_full, s.n_batch,
                        ctx.model.settings.n_gpu_layers)
        # Private from the cache folder down (0700, ours); a refused file is one line, a notice in the app.
        top = cache if cache in folder.parents else folder
        ctx.prefixes = PrefixStore(folder / key, wanted, top=top, report=report)


def open_engine(config: RunConfig, *, history: CallHistory | None = None, memory: SpanMemory | None = None,
                costs: CostModel | None = None, drafting: DraftingConfig | None = None,
                generations: GenerationLog | None = None) -> Opened:
    """The pair and an engine drafting as `config.drafting` says (or `drafting`, a variant the bench compares).
    `history` is the tool-call history drafting learns from and `generations` where recall keeps what was
    generated (front ends that record conversations pass the stored ones: agent/drafting_memory.py)."""
    pair, warning = open_pair(config)
    try:
        engine = build_engine(pair, drafting or config.drafting, history=history, costs=costs, memory=memory,
                              generations=generations)
        # While the front end says "loading": the first reply of a session then starts as fast as any other.
        engine.calibrate_now(pair.target.bos if pair.target.bos >= 0 else 0)
    except BaseException:
        pair.close()
        raise
    return Opened(config, pair, engine, warning)
