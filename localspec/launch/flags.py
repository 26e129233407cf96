"""What a user can choose about the model, its context, drafting and sampling: the same set in every front end
(`run`, `run --tools`, `serve`, the app, `bench`). None means "not given": config.toml, the pair's hints and then
the built-in defaults decide (launch/run_config.py). Front ends fill it from their own arguments; nothing below them
sees an argparse Namespace."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class RunFlags:
    # which model files
    pair: str | None = None  # a catalog or `localspec add` pair
    target: str | None = None  # an explicit target GGUF (instead of a pair)
    draft: str | None = None  # an explicit draft GGUF
    no_draft: bool = False  # target-only decoding: no draft model and no other drafter
    no_mtp: bool = False  # do not draft with (or load) the target's own MTP layers
    head: str | None = None  # a draft head file beside the target (EAGLE-3, DFlash, mtp-*.gguf), with or without --draft
    offline: bool = False  # local files only
    # how they are loaded and run
    n_gpu_layers: int | None = None  # target layers to offload (-1: all; default: all where the build can)
    draft_n_gpu_layers: int | None = None
    ctx_size: int | None = None
    threads: int | None = None  # 0: one per core
    flash_attn: str | None = None  # auto | on | off
    chat_template: str | None = None  # a Jinja file replacing the GGUF's own template
    # drafting
    drafters: str | None = None  # comma-separated registry names, or "none"
    draft_max: int | None = None
    draft_p_min: float | None = None
    # sampling and generation
    max_tokens: int | None = None
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    thinking: bool | None = None  # reasoning models think first (config.toml reasoning.thinking)
    # where generation runs (launch/backend_choice.py): local llama.cpp, or an OpenAI-compatible server
    backend: str | None = None  # local | openai (config.toml backend.kind)
    base_url: str | None = None  # the server's API root, e.g. http://host:8000/v1
    remote_model: str | None = None  # the model name on the server (None: the first it lists)
    api_key: str | None = None  # bearer token for the server

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))
