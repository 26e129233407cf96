"""The conversation as the chat screen shows it: messages, reasoning blocks and tool cards, drawn from a turn's events
as they come (one handler per event type) or from a saved history (a reasoning model's thinking as a collapsed block,
tool calls as finished cards), and moved through with Up and Down.

Why a widget of its own: what a turn looks like in the log is one concern; the screen around it (the prompt, the
top bar, the statistics panel, sending and editing) routes events here and keeps none of this state.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Awaitable, Callable

from textual.containers import VerticalScroll

from localspec.agent import Notice, ToolCallFinished, ToolCallStarted
from localspec.agent.outcome import AgentResult
from localspec.tui.turn import TextChunk
from localspec.tui.widgets.message import ChatMessage
from localspec.tui.widgets.reasoning import ReasoningBlock
from localspec.tui.widgets.toolcard import ToolCard

if TYPE_CHECKING:
    from textual.widget import Widget

ERROR_PREFIX = "Error: "  # how ToolResult.for_model marks a failed call in the tool message
CANCELLED = "cancelled: the reply so far is kept (Ctrl+G writes it again)"


def _arguments(raw) -> dict:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {"arguments": str(raw)}
    return value if isinstance(value, dict) else {"arguments": value}


async def show_history(log, messages: list[dict], *, origins: bool = False) -> int:
    """Mount widgets for `messages` (chat-template dicts) at the end of `log`; returns how many were mounted."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    widgets: list[Widget] = []
    cards: list[tuple[ToolCard, dict | None]] = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        text = content if isinstance(content, str) else ("" if content is None else json.dumps(content))
        if role == "user":
            widgets.append(ChatMessage("user", text, origins=origins))
        elif role == "assistant":
            if m.get("reasoning_content"):
                widgets.append(ReasoningBlock.finished(str(m["reasoning_content"])))
            if text.strip() or not m.get("tool_calls") and not (m.get("cancelled") or m.get("failed")):
                widgets.append(ChatMessage("assistant", text, origins=origins))
            if m.get("cancelled"):
                widgets.append(ChatMessage("note", CANCELLED))
            elif m.get("failed"):
                widgets.append(ChatMessage("note", f"the reply failed: {m['failed']}"))
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                card = ToolCard(str(call.get("id", "")), str(fn.get("name", "?")), _arguments(fn.get("arguments")))
                widgets.append(card)
                cards.append((card, results.get(call.get("id"))))
    if widgets:
        await log.mount_all(widgets)
    for card, result in cards:
        body = (result or {}).get("content") or ""
        if result is None:
            card.finish(False, "", "no result was saved (the app stopped during the call)")
        elif body.startswith(ERROR_PREFIX):
            error, _, rest = body[len(ERROR_PREFIX):].partition("\n")
            card.finish(False, rest, error)
        else:
            card.finish(True, body, None)
    return len(widgets)


class ChatLog(VerticalScroll):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.origins = False  # colour each token by who proposed it (Ctrl+O)
        self._current: ChatMessage | None = None  # the message being streamed into
        self._thinking: ReasoningBlock | None = None  # the reasoning block being written
        self._cards: dict[str, ToolCard] = {}  # tool cards waiting for their result, by call id
        self._handlers: dict[type, Callable[..., Awaitable[None]]] = {
            TextChunk: self.show_text, ToolCallStarted: self.show_tool_call, ToolCallFinished: self.show_tool_result,
            Notice: self.show_notice}

    def on_mount(self) -> None:
        self.anchor()  # follow the newest text while a reply streams

    # -- a turn, event by event -------------------------------------------------------------------------------------
    async def show(self, event) -> None:
        """Draw one event of a running turn (the events the log has no part in are left to the screen)."""
        if not (isinstance(event, TextChunk) and event.kind == "reasoning"):
            self._fold_reasoning()  # the answer, a call or the end: the reasoning folds away
        handler = self._handlers.get(type(event))
        if handler is not None:
            await handler(event)

    async def show_text(self, chunk: TextChunk) -> None:
        if chunk.kind == "reasoning":
            if self._thinking is None:
                await self._close_current()
                self._thinking = ReasoningBlock()
                await self.mount(self._thinking)
            self._thinking.append(chunk.text, chunk.tokens)
            return
        role = "call" if chunk.kind == "call" else "assistant"
        if self._current is None or self._current.role != role:
            await self._close_current()
            self._current = await self.add_message(role)
        await self._current.append(chunk.runs)

    async def show_tool_call(self, ev: ToolCallStarted) -> None:
        await self._close_current()
        card = ToolCard(ev.call_id, ev.name, ev.arguments)
        self._cards[ev.call_id] = card
        await self.mount(card)

    async def show_tool_result(self, ev: ToolCallFinished) -> None:
        started = self._cards.pop(ev.call_id, None)
        if started is not None:
            started.finish(ev.result.ok, ev.result.content, ev.result.error)

    async def show_notice(self, ev: Notice) -> None:
        await self._close_current()
        await self.add_message("note", ev.message)

    async def show_end(self, result: AgentResult, max_tokens: int) -> None:
        """The turn is over: why it failed or stopped early, said under its reply."""
        self._fold_reasoning()
        await self._close_current()
        if result.error:
            await self.add_message("error", result.error + "  (Ctrl+G tries again)")
        if result.finish_reason == "cancelled":
            await self.add_message("note", CANCELLED)
        elif result.finish_reason == "length":
            await self.add_message("note", f"stopped at the token limit ({max_tokens} tokens): F3 → This "
                                           "conversation → max tokens raises it")
        elif result.finish_reason == "max_steps":
            await self.add_message("note", "stopped at the step limit")

    def _fold_reasoning(self) -> None:
        if self._thinking is not None:
            self._thinking.finish()
            self._thinking = None

    async def _close_current(self) -> None:
        if self._current is not None:
            await self._current.finish()
            self._current = None

    # -- the whole log ----------------------------------------------------------------------------------------------
    async def add_message(self, role: str, text: str = "") -> ChatMessage:
        msg = ChatMessage(role, text, origins=self.origins)
        await self.mount(msg)
        return msg

    async def redraw(self, history: list[dict]) -> None:
        """Draw `history` (chat-template messages, the system prompt left out) in place of what is shown."""
        await self.clear()
        await show_history(self, [m for m in history if m.get("role") != "system"], origins=self.origins)
        self.scroll_end(animate=False)

    async def clear(self) -> None:
        self._cards.clear()
        self._current = self._thinking = None
        await self.remove_children()

    def set_origins(self, on: bool) -> None:
        self.origins = on
        for msg in self.query(ChatMessage):
            msg.set_origins(on)

    def messages(self) -> list[ChatMessage]:
        return [m for m in self.children if isinstance(m, ChatMessage)]

    def last_reply(self) -> str | None:
        replies = [m for m in self.messages() if m.role == "assistant"]
        return replies[-1].text if replies else None

    def exchange_of(self, widget) -> int | None:
        """The exchange (counted from the end: -1 is the last) a widget of the log belongs to: its user message and
        the reply to it. None above the first user message, or for a widget not in the log."""
        children = list(self.children)
        if widget not in children:
            return None
        users = [i for i, w in enumerate(children) if isinstance(w, ChatMessage) and w.role == "user"]
        before = [i for i in users if i <= children.index(widget)]
        if not before:
            return None
        return users.index(before[-1]) - len(users)

    # -- moving through the messages (Up from an empty prompt, then Up and Down) -------------------------------------
    def focus_last(self) -> bool:
        """Focus the last message of the conversation; False when there is none."""
        mine = [m for m in self.messages() if m.role in ("user", "assistant")]
        if not mine:
            return False
        mine[-1].focus()
        mine[-1].scroll_visible(animate=False)
        return True

    def step(self, focused, delta: int) -> bool:
        """Focus the message `delta` away from `focused`; False past the last one (the prompt is next)."""
        messages = self.messages()
        if focused not in messages:
            return True
        i = messages.index(focused) + delta
        if i >= len(messages):
            return False
        if i >= 0:
            messages[i].focus()
            messages[i].scroll_visible(animate=False)
        return True
