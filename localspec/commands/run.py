"""`localspec run PROMPT`: one generation, headless, streamed or as one JSON object.

With --tools the agent loop runs instead (commands/agent_run.py); with --backend openai a remote server generates
(commands/run_remote.py). All three share one parser, so their flags are registered here.
"""

from __future__ import annotations

import sys
import time

from localspec.agent.backend import describe
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


RUN_DESCRIPTION = (
    "Answer PROMPT, streamed to stdout (the reasoning and a summary line to stderr) or as one JSON object (--json); "
    "saved as a conversation that --continue carries on. Drafting never changes which token the target picks: "
    "greedy output is token for token what the target alone writes (--no-draft) with F16 weights, but for "
    "near-ties a batched pass breaks the other way; with quantized weights a batch moves the logits further and "
    "replies part from it more often (README: When greedy output is exact).")


def register(sub) -> None:
    p = sub.add_parser("run", help="generate once from a prompt (headless)", description=RUN_DESCRIPTION)
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


def prompt_tokens(model, messages: list[dict], thinking: bool = True) -> list[int]:
    """The conversation rendered with the model's chat template, as the agent's turns render it (without the marks
    only the store reads, and with the template's thinking switch)."""
    from localspec.prompting import thinking as think
    from localspec.prompting.prompt import chat_prompt_tokens
    from localspec.turns.conversation import model_messages

    template = model.chat_template
    msgs = think.no_think(model_messages(messages), template, thinking)
    return chat_prompt_tokens(model, msgs, template_vars=think.template_vars(template, thinking))


def cmd_run(args) -> int:
    if not args.prompt.strip():  # before any model loads: an empty prompt would generate from nothing
        from localspec.errors import ConfigError

        raise ConfigError("the prompt is empty: give the text to answer, e.g. localspec run \"hello\"")
    remote = remote_config(args)  # --backend openai, or backend.kind in config.toml
    if getattr(args, "tools", False):
        return cmd_agent_run(args, remote)
    from localspec.commands.saved_chat import SavedChat

    chat = SavedChat(args, raw=args.raw)  # a conversation to carry on is found (or refused) before a model loads
    try:
        if remote is not None:
            return cmd_remote_run(args, remote, chat)
        return _run_local(args, chat)
    finally:
        chat.close()


def _run_local(args, chat) -> int:
    history, generations = chat.drafting_memory()
    opened = open_from_args(args, warn=not args.raw, history=history, generations=generations)
    pair, engine, config = opened.pair, opened.engine, opened.config
    from localspec.commands.console import PromptMeter, end_reply
    from localspec.prompting import thinking as think

    t0 = time.perf_counter()  # the first token's wait starts here: rendering the prompt is part of it
    if args.raw:
        tokens = pair.target.tokenize(args.prompt)
    else:
        tokens = prompt_tokens(pair.target, chat.messages(args.prompt), config.thinking)
    render_s = time.perf_counter() - t0
    params = config.params
    sel = config.selection
    chat.start(args.prompt, describe(sel).label,  # "target + draft" as run --tools and the app name a pair
               {"pair_name": sel.pair, "target": str(sel.target), "draft": str(sel.draft) if sel.draft else None,
                "temperature": params.sampling.temperature, "max_tokens": params.max_tokens})
    state = think.OFF if args.raw else think.reply_state(pair.target, pair.target.chat_template, tokens)
    splitter = think.ReasoningSplitter(opened=state == think.OPEN_STATE) if state != think.OFF else None
    if args.json:
        try:
            gen = engine.generate(tokens, params)
        except KeyboardInterrupt:
            chat.finish("", "", None, "cancelled", cancelled=True)
            raise
        reasoning, text = think.split(gen.text, opened=state == think.OPEN_STATE) if splitter else ("", gen.text)
        chat.finish(text, reasoning, gen.stats, gen.stats.finish_reason)
        ttft = round(render_s + gen.stats.first_token_s, 4) if gen.tokens else None
        print(safe_json({"text": text, "reasoning": reasoning, "stats": gen.stats.to_dict(),
                         "target": str(pair.target.path), "draft": str(pair.draft.path) if pair.draft else None,
                         "head": pair.head.summary() if pair.head else None,
                         "time_to_first_token_s": ttft, "reused_prefix_tokens": gen.stats.reused_prefix_tokens,
                         "conversation": chat.id}, ensure_ascii=True))
        return 0
    show = getattr(args, "reasoning", "show") == "show"
    printer = ReasoningPrinter(show)
    meter = PromptMeter()
    written: list[tuple[str, str]] = []  # (kind, text) as shown: what the record keeps of a reply cut short

    def write(pieces) -> None:
        written.extend(pieces)
        printer.write(pieces)

    try:
        for ev in engine.stream(tokens, params, on_prefill=lambda done, total: meter.update(
                done, total, time.perf_counter() - t0)):
            meter.clear()
            if ev.text:
                write(splitter.feed(ev.text) if splitter else [("text", ev.text)])
    except KeyboardInterrupt:
        meter.clear()
        chat.finish(*_texts(written), engine.last_stats, "cancelled", cancelled=True)
        raise
    meter.clear()
    if splitter:
        write(splitter.finish())
    printer.end()
    end_reply()
    stats = engine.last_stats
    chat.finish(*_texts(written), stats, stats.finish_reason if stats else "stop")
    print(f"[{engine.last_stats.summary()}{chat.saved_note()}]", file=sys.stderr, flush=True)
    return 0


def _texts(pieces: list[tuple[str, str]]) -> tuple[str, str]:
    """(answer, reasoning) of the pieces shown."""
    return ("".join(t for k, t in pieces if k == "text"), "".join(t for k, t in pieces if k == "reasoning"))
