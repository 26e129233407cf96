"""What the chat's commands and editing (chat_commands.py, chat_editing.py) use of the chat screen. They cannot import
chat.py, which imports them (the layers allow no cycle, not even for typing): chat.py's ChatScreen satisfies this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

    from localspec.tui.session import ChatSession
    from localspec.tui.widgets.chat_log import ChatLog
    from localspec.tui.widgets.message import ChatMessage
    from localspec.tui.widgets.prompt_input import PromptInput


class ChatView(Protocol):
    busy: bool

    @property
    def notify(self) -> Callable[..., Any]: ...

    @property
    def session(self) -> ChatSession: ...

    @property
    def prompt(self) -> PromptInput: ...

    @property
    def app(self) -> App: ...

    @property
    def focused(self) -> Widget | None: ...

    @property
    def chat_log(self) -> ChatLog: ...

    async def add_message(self, role: str, text: str = "") -> ChatMessage: ...

    async def send(self, text: str, tool: str | None = None) -> None: ...

    async def show_conversation(self, *, restart: bool = True) -> None: ...

    def refresh_header(self) -> None: ...

    def refresh_bindings(self) -> None: ...

    def reset_prompt(self) -> None: ...
