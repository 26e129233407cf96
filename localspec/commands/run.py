"""`localspec run PROMPT`: one generation, headless, streamed or as one JSON object.

With --tools the agent loop runs instead (commands/agent_run.py); with --backend openai a remote server generates
(commands/run_remote.py). All three share one parser, so their flags are registered here.
"""

from __future__ import annotations

import sys
import time

from localspec.commands.agent_run import add_agent_args, cmd_agent_run
from localspec.commands.reasoning_output import ReasoningPrinter
from localspec.commands.run_remote import cmd_remote_run
from localspec.commands.shared_flags import (
    add_generation_args,
    add_model_args,
    add_remote_args,
    add_thinking_args,
    open_from_args,
    remote_config,
)
from localspec.terminal import safe_json


def register(sub) -> None:
    p = sub.add_parser("run", help="generate once from a prompt (headless)")
    p.add_argument("prompt", metavar="PROMPT")
    add_model_args(p)
    add_generation_args(p)
    p.add_argument("--raw", action="store_true", help="feed the prompt as plain text, without the chat template")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    add_reasoning_args(p)
    add_agent_args(p)
    add_remote_args(p)
    p.set_defaults(func=cmd_run)


def add_reasoning_args(p) -> None:
    g = p.add_argument_group("reasoning models (Qwen3, QwQ, DeepSeek-R1: <think>...</think>)")
    g.add_argument("--reasoning", choices=("show", "hide"), default="show",
                   help="show (default): the reasoning goes to stderr as it is written; hide: not printed "
                        "(--json always has it in \"reasoning\")")
    add_thinking_args(g)


def prompt_tokens(model, prompt: str, raw: bool, thinking: bool = True) -> list[int]:
    if raw:
        return model.tokenize(prompt)
    from localspec.prompting import thinking as think
    from localspec.prompting.prompt import chat_prompt_tokens

    template = model.chat_template
    messages = think.no_think([{"role": "user", "content": prompt}], template, thinking)
    return chat_prompt_tokens(model, messages, template_vars=think.template_vars(template, thinking))


def cmd_run(args) -> int:
    if not args.prompt.strip():  # before any model loads: an empty prompt would generate from nothing
        from localspec.errors import ConfigError

        raise ConfigError("the prompt is empty: give the text to answer, e.g. localspec run \"hello\"")
    if (args.resume or args.continue_last) and not args.tools:
        from localspec.errors import ConfigError

        raise ConfigError("--resume and --continue carry on a saved conversation: add --tools")
    remote = remote_config(args)  # --backend openai, or backend.kind in config.toml
    if getattr(args, "tools", False):
        return cmd_agent_run(args, remote)
    if remote is not None:
        return cmd_remote_run(args, remote)
    opened = open_from_args(args, warn=not args.raw)
    pair, engine, config = opened.pair, opened.engine, opened.config
    from localspec.commands.console import PromptMeter, end_reply
    from localspec.prompting import thinking as think

    t0 = time.perf_counter()  # the first token's wait starts here: rendering the prompt is part of it
    tokens = prompt_tokens(pair.target, args.prompt, args.raw, config.thinking)
    render_s = time.perf_counter() - t0
    params = config.params
    state = think.OFF if args.raw else think.reply_state(pair.target, pair.target.chat_template, tokens)
    splitter = think.ReasoningSplitter(opened=state == think.OPEN_STATE) if state != think.OFF else None
    if args.json:
        gen = engine.generate(tokens, params)
        reasoning, text = think.split(gen.text, opened=state == think.OPEN_STATE) if splitter else ("", gen.text)
        ttft = round(render_s + gen.stats.first_token_s, 4) if gen.tokens else None
        print(safe_json({"text": text, "reasoning": reasoning, "stats": gen.stats.to_dict(),
                         "target": str(pair.target.path), "draft": str(pair.draft.path) if pair.draft else None,
                         "head": pair.head.summary() if pair.head else None,
                         "time_to_first_token_s": ttft, "reused_prefix_tokens": gen.stats.reused_prefix_tokens},
                        ensure_ascii=True))
        return 0
    show = getattr(args, "reasoning", "show") == "show"
    printer = ReasoningPrinter(show)
    meter = PromptMeter()
    for ev in engine.stream(tokens, params, on_prefill=lambda done, total: meter.update(
            done, total, time.perf_counter() - t0)):
        meter.clear()
        if ev.text:
            printer.write(splitter.feed(ev.text) if splitter else [("text", ev.text)])
    meter.clear()
    if splitter:
        printer.write(splitter.finish())
    printer.end()
    end_reply()
    print(f"[{engine.last_stats.summary()}]", file=sys.stderr, flush=True)
    return 0

