"""A saved conversation drawn back into the chat log: user and assistant messages, a reasoning model's thinking as a
collapsed block, tool calls as finished cards."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

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
