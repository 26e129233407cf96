"""One assistant turn on the speculative engine: the hardest logic of the product, written once for the agent
loop, the server and the bench.

A turn is phases, each one engine generation:
  reasoning  a reasoning model thinks first (prompting/thinking.py), freely, up to `</think>`: a model that mentions
             `<tool_call>` while thinking has not made a call. A model that answers without opening a block is
             answering: its first words become the start of the answer.
  text       free text until the format's call trigger (a stop string), which is never shown.
  call       from exactly the tokens the model wrote up to the trigger (a tokenizer whose `<tool_call>` is one
             special token never writes it as text, so a grammar asked to write it would refuse the model's own
             choice), the call under the tools' JSON Schemas: every call that comes out is valid.
  probe      after a call, a few free tokens let the model decide whether another call follows (it writes the
             trigger again) or the turn ends: a grammar that allowed a separator after a call would push models
             that merely like a newline there into repeating calls.
  json       (response_format) the whole output under one grammar: a JSON answer, or a call when tools are given.
Formats whose call body is not JSON (Gemma styles) are generated freely and read with the format's own parser.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from typing import Sequence

from localspec.errors import ContextOverflowError
from localspec.prompting import thinking as think
from localspec.prompting.prompt import tool_format
from localspec.speculative import TARGET, WRAP_UP, GenParams, GrammarConstraint, SpecEngine, Stats, whole_chars
from localspec.turns.calls import (
    CallStart,
    call_grammar,
    constrainable,
    cut_at_trigger,
    is_call,
    list_form,
    parse_calls,
)
from localspec.turns.events import CALL, JSON, REASONING, TEXT, Delta, Emit, PromptRead, ReasoningWritten
from localspec.turns.request import TurnRequest
from localspec.turns.result import TurnResult
from localspec.turns.tool_choice import REQUIRED
from localspec.turns.watch import TriggerWatch

PROBE_SLACK = 4  # tokens a probe may write besides the longest trigger (a newline, a space) before it gives up


def _ignore(event) -> None:
    pass


class TurnEngine:
    """Runs turns on one SpecEngine (not thread-safe, like the engine: one turn at a time)."""

    def __init__(self, engine: SpecEngine, model=None, fmt=None):
        self.engine = engine
        self.model = model if model is not None else engine.target.model
        self.fmt = fmt if fmt is not None else tool_format(self.model)

    def run(self, prompt: Sequence[int], request: TurnRequest = TurnRequest(), *,
            cancel: threading.Event | None = None, emit: Emit | None = None) -> TurnResult:
        """Generate one assistant turn after `prompt` (the rendered conversation, generation prompt included)."""
        return _Turn(self, list(prompt), request, cancel or threading.Event(), emit or _ignore).run()


class _Turn:
    def __init__(self, te: TurnEngine, prompt: list[int], req: TurnRequest, cancel: threading.Event, emit: Emit):
        self.engine, self.model, self.fmt = te.engine, te.model, te.fmt
        self.prompt, self.req, self.cancel, self.emit = prompt, req, cancel, emit
        self.tools = list(req.tools)
        self.out = TurnResult(prompt_tokens=len(prompt))
        self.triggers = tuple(t for t in (self.fmt.triggers or (self.fmt.trigger,)) if t)

    def run(self) -> TurnResult:
        try:
            if self.req.grammar is not None:
                self._whole()
            elif self.req.choice.mode == REQUIRED and self.tools:
                self._required()
            else:
                self._auto()
        except ContextOverflowError as exc:
            self.out.finish, self.out.error = "context", str(exc)
        return self.out

    # -- budgets ---------------------------------------------------------------------------------------------
    def _cap(self, n: int) -> int:
        """`n` tokens, or fewer where the turn's total allows fewer (at least 1: a phase that runs writes)."""
        if self.req.total_tokens is None:
            return max(n, 1)
        return max(min(n, self.req.total_tokens - self.out.generated_tokens), 1)

    def _spent(self) -> bool:
        return self.req.total_tokens is not None and self.out.generated_tokens >= self.req.total_tokens

    # -- one generation ----------------------------------------------------------------------------------------
    def _stream(self, phase: str, prompt: list[int], params: GenParams, constraint=None,
                on_event=None) -> tuple[list[int], str, Stats]:
        """One engine generation, recorded as `phase`; on_event(ev) -> True stops it early."""
        tokens: list[int] = []
        parts: list[str] = []
        t0 = time.perf_counter()

        def reading(done: int, total: int) -> None:
            self.emit(PromptRead(done, total, time.perf_counter() - t0))

        gen = self.engine.stream(prompt, params, constraint=constraint, cancel=self.cancel, on_prefill=reading)
        try:
            for ev in gen:
                if ev.token >= 0:
                    tokens.append(ev.token)
                if ev.text:
                    parts.append(ev.text)
                if on_event is not None and on_event(ev):
                    break
        finally:
            gen.close()  # the engine's bookkeeping (statistics) runs now, also when we stopped early
        stats = self.engine.last_stats or Stats()
        self.out.phases.append((phase, stats))
        return tokens, "".join(parts), stats

    # -- the whole output under one grammar (response_format) ---------------------------------------------------
    def _whole(self) -> None:
        assert self.req.grammar is not None  # run() comes here only with a grammar
        constraint = GrammarConstraint(self.model, self.req.grammar, self.tools or None)

        def on(ev):
            if ev.text:
                self.emit(Delta(ev.text, JSON, ev.origin, ev.token))

        params = replace(self.req.params, max_tokens=self._cap(self.req.params.max_tokens))
        tokens, text, stats = self._stream("json", self.prompt, params, constraint, on)
        self.out.finish = stats.finish_reason
        if self.tools and stats.finish_reason in ("grammar", "stop") and is_call(self.fmt, text, self.tools):
            calls, error = parse_calls(self.fmt, text)
            if calls:
                self.out.calls = calls
                self.engine.remember_call(tokens, text, calls[0][0])
                return
            if error:
                self.out.notices.append(error)
                self.out.call_error = error
        self.out.content = text

    # -- a call required from the first token ---------------------------------------------------------------------
    def _required(self) -> None:
        fmt = self.fmt
        if constrainable(fmt):
            # The trigger goes into the prompt as the model's own tokens (special tokens stay special); the grammar
            # writes the rest.
            emitted = fmt.trigger if fmt.trigger and fmt.call_prefix.startswith(fmt.trigger) else ""
            head = self.model.tokenize(emitted, add_special=False, parse_special=True) if emitted else []
            self._calls(self.prompt + head, emitted)
            return
        head = self.model.tokenize(fmt.call_prefix, add_special=False, parse_special=True)
        self.emit(Delta(fmt.call_prefix, CALL))

        def on(ev):
            if ev.text:
                self.emit(Delta(ev.text, CALL, ev.origin, ev.token))

        params = replace(self.req.params, max_tokens=self._cap(self.req.params.max_tokens))
        _, text, stats = self._stream("call", self.prompt + head, params, None, on)
        self.out.finish = stats.finish_reason
        self._parsed(fmt.call_prefix + text)

    def _parsed(self, text: str) -> None:
        """The format's own parser as the reader of a message written freely."""
        result = self.fmt.parse(text)
        self.out.content = result.content if result.calls else text
        self.out.calls = [(c.name, c.arguments) for c in result.calls]
        self.out.notices.extend(result.errors)

    # -- free text, then calls where the model starts one --------------------------------------------------------
    def _auto(self) -> None:
        req, model = self.req, self.model
        prompt, lead_tokens, lead_text, used = self.prompt, [], "", 0
        after_block = False  # the answer follows a reasoning block: its leading blank lines are not shown
        state = think.reply_state(model, model.chat_template, prompt)
        if state != think.OFF:
            thought = self._think(state == think.OPEN_STATE)
            if thought is None:
                return
            prompt, lead_tokens, lead_text, used = thought
            after_block = not lead_text
        watching = constrainable(self.fmt) and bool(self.tools)
        triggers = self.triggers if watching else ()
        watch = TriggerWatch(triggers)
        started = not after_block

        def show(text: str, origin: str, token: int) -> None:
            nonlocal started
            if not started:
                text = text.lstrip()
                if not text:
                    return
                started = True
            safe = watch.feed(text)
            if safe:
                self.emit(Delta(safe, TEXT, origin, token))

        if lead_text:
            show(lead_text, TARGET, -1)
        tokens = list(lead_tokens)
        finish = "stop"
        if not watch.triggered:
            def on(ev):
                if ev.text:
                    show(ev.text, ev.origin, ev.token)
                return watch.triggered

            params = replace(req.params, max_tokens=self._cap(req.params.max_tokens - used),
                             stop=tuple(req.params.stop) + triggers)
            more, _, stats = self._stream("text", prompt + lead_tokens, params, None, on)
            tokens += more
            finish = stats.finish_reason
        self.out.finish = finish
        rest = watch.flush()
        if rest:
            self.emit(Delta(rest, TEXT))
        self.out.content = watch.content
        if watching and (finish == "stop" or watch.triggered):
            start = self._cut(tokens)
            if start is not None:
                if not req.choice.calls:
                    self.out.wanted_call = True
                    return
                self._calls(prompt + start.tokens, start.emitted)
                return
        if req.choice.calls and self.tools:
            self._parsed(self.out.content)

    def _cut(self, tokens: list[int]) -> CallStart | None:
        """The cut at the trigger (turns/calls.py), on the shortest head of `tokens` that holds one: text released
        late (a lead from the reasoning phase) may have let the generation run past the trigger's token."""
        data, longest = b"", max(len(t.encode()) for t in self.triggers)
        for n, t in enumerate(tokens, 1):
            piece = self.model.token_bytes(t)
            data += piece
            if any(tr.encode() in data[-(len(piece) + longest):] for tr in self.triggers):
                return cut_at_trigger(self.model, self.fmt, tokens[:n])
        return None

    # -- reasoning ------------------------------------------------------------------------------------------------
    def _think(self, opened: bool):
        """The reasoning, up to and including `</think>`. Returns (prompt for the answer, tokens and text of the
        answer already written, tokens spent), or None when the turn ends here (cancelled, a stop string or the
        token limit inside the reasoning)."""
        model, req = self.model, self.req
        splitter = think.ReasoningSplitter(opened=opened)
        seen: list[str] = []
        sent = 0  # how much of `seen` went out as ReasoningWritten (none before a block is open)
        answering = False

        def written(final: str = "") -> None:
            nonlocal sent
            text = "".join(seen)[sent:] + final
            sent += len(text) - len(final)
            if text:
                self.out.written_reasoning += text
                self.emit(ReasoningWritten(text))

        def on(ev):
            nonlocal answering
            if not ev.text:
                return False
            seen.append(ev.text)
            pieces = splitter.feed(ev.text)
            if splitter.state == "answer":
                answering = True
                return True  # no block after all: the answer goes on under the trigger watch
            if splitter.state != "start":
                written()
            for kind, text in pieces:
                if kind == "reasoning":
                    self.emit(Delta(text, REASONING, ev.origin, ev.token))
            return False

        params = replace(req.params, max_tokens=self._cap(req.params.max_tokens),
                         stop=tuple(req.params.stop) + (think.CLOSE,))
        tokens, text, stats = self._stream("reasoning", self.prompt, params, None, on)
        self.out.finish = stats.finish_reason
        if answering:
            self.out.phases[-1] = ("text", stats)
            # The released text lags behind the tokens (`</think>` is a stop string, so a tail that could start it
            # is held back): the answer is what the tokens say, so that the text shown and the tokens the
            # generation continues from agree.
            kept, whole = whole_chars(model.token_bytes, tokens)
            whole = whole.lstrip()
            if whole.startswith(splitter.answer):
                return self.prompt, kept, whole, len(kept)
            return self.prompt, tokens, splitter.answer, len(tokens)
        closed = think.CLOSE.encode() in b"".join(model.token_bytes(t) for t in tokens)
        for kind, rest in (splitter.close() if closed else splitter.finish()):
            if kind == "reasoning":
                self.emit(Delta(rest, REASONING))
        written(think.CLOSE if closed else "")  # the engine holds back the stop string `</think>` itself
        self.out.reasoning = splitter.reasoning
        room = req.params.max_tokens - len(tokens)
        if not closed or room < 1 or self._spent():
            if stats.finish_reason == "stop" and not closed:
                self.out.content = splitter.answer
            elif closed and stats.finish_reason == "stop":
                self.out.finish = "length"  # the token limit fell right after the reasoning
            return None
        return self.prompt + tokens, [], "", len(tokens)

    # -- calls ----------------------------------------------------------------------------------------------------
    def _calls(self, prompt: list[int], emitted: str) -> None:
        """Calls one at a time under the constraint, from a prompt that ends with the `emitted` part of the call
        prefix; after each, the probe (with `parallel`) lets the model say whether another follows."""
        req = self.req
        seen: set[str] = set()
        prompt = list(prompt)
        while True:
            if len(prompt) + 2 >= self.engine.target.n_ctx:
                self.out.finish = "context"
                self.out.error = "no room left in the context for a tool call"
                return
            tokens, text, stats = self._one_call(prompt, emitted)
            self.out.finish = stats.finish_reason
            if stats.finish_reason == "cancelled":
                return
            calls, error = parse_calls(self.fmt, text)
            if stats.finish_reason == "grammar" and calls:
                self.engine.remember_call(tokens, text, calls[0][0])  # complete calls only: drafting learns them
            if error:
                self.out.notices.append(error)
                self.out.call_error = error
            for name, args in calls:
                key = json.dumps([name, args], sort_keys=True)
                if key in seen:  # small models loop on the same call; running it twice in one turn helps nobody
                    self.out.notices.append(f"a repeat of the same {name} call in one turn was dropped")
                    return
                seen.add(key)
                self.out.calls.append((name, args))
            if error or not req.parallel or len(self.out.calls) >= req.max_calls or list_form(self.fmt) \
                    or self._spent():
                return
            prompt += tokens
            start = self._probe(prompt)
            if start is None:
                return
            # (a reasoning model may think again between calls: that is not answer text)
            before = think.split(start.before)[1] if think.CLOSE in start.before else start.before
            if before.strip():
                self.out.content = (self.out.content.strip() + "\n" + before.strip()).strip()
            prompt += start.tokens
            emitted = start.emitted

    def _one_call(self, prompt: list[int], emitted: str) -> tuple[list[int], str, Stats]:
        req = self.req
        grammar = call_grammar(self.fmt, self.tools, emitted, parallel=False, bounds=req.bounds)
        constraint = GrammarConstraint(self.model, grammar, self.tools)
        n = self._cap(req.call_max_tokens)
        # Near the token limit the call wraps up (closes its strings and objects) instead of being cut off.
        params = replace(req.params, max_tokens=n, stop=(), wrap_up=min(WRAP_UP, n // 4))
        if emitted:
            self.emit(Delta(emitted, CALL))

        def on(ev):
            if ev.text:
                self.emit(Delta(ev.text, CALL, ev.origin, ev.token))

        tokens, text, stats = self._stream("call", prompt, params, constraint, on)
        return tokens, emitted + text, stats

    def _probe(self, prompt: list[int]) -> CallStart | None:
        """A few free tokens after a call: where the model opens another call, where it starts; else None."""
        room = max(len(self.model.tokenize(t, add_special=False, parse_special=True)) for t in self.triggers)
        params = replace(self.req.params, stop=self.triggers, max_tokens=self._cap(room + PROBE_SLACK))
        tokens, _, stats = self._stream("probe", prompt, params)
        if stats.finish_reason != "stop":
            if stats.finish_reason == "cancelled":
                self.out.finish = "cancelled"
            return None
        return cut_at_trigger(self.model, self.fmt, tokens)
