"""Editing the conversation from the chat screen: on a focused message (Up from an empty prompt), e edits and resends
it, r writes the reply to it again, d deletes it with its reply; Ctrl+G writes the last reply again. Each changes the
session's history and its saved copy together (conversations/editing.py), then the log is drawn again."""

from __future__ import annotations

from localspec.tui.screens.chat_view import ChatView
from localspec.tui.screens.sessions import ConfirmScreen
from localspec.tui.widgets.message import ChatMessage

ACTIONS = ("edit_message", "regenerate_message", "delete_message")


class Editing:
    def __init__(self, screen: ChatView) -> None:
        self.screen = screen
        self.exchange: int | None = None  # the exchange (from the end, -1: the last) the message being edited replaces

    @property
    def active(self) -> bool:
        return self.exchange is not None

    def allows(self, action: str) -> bool:
        """Which of the message keys apply to the focused widget (the footer shows only those)."""
        focused = self.screen.focused
        role = focused.role if isinstance(focused, ChatMessage) else None
        if action == "edit_message":
            return role == "user"
        return role in ("user", "assistant", "note", "error", "call")

    def _editable(self) -> int | None:
        screen = self.screen
        if screen.busy:
            screen.notify("a reply is being written: cancel it (Esc) first", severity="warning")
            return None
        k = screen.chat_log.exchange_of(screen.focused)
        if k is None:
            screen.notify("focus a message of the conversation first (Up from an empty prompt)", severity="warning")
        return k

    def edit(self) -> None:
        """The focused user message goes into the prompt; sent, it replaces the original and what followed."""
        k = self._editable()
        if k is None:
            return
        screen = self.screen
        focused = screen.focused
        assert isinstance(focused, ChatMessage)  # the key applies to a focused user message only (allows)
        prompt = screen.prompt
        prompt.value = focused.text
        self.exchange = k
        prompt.placeholder = ""
        prompt.focus()
        screen.refresh_bindings()
        screen.notify("editing: Enter sends it in place of the original (and of what followed); Esc cancels",
                      timeout=4)

    async def take_back_edited(self) -> None:
        """Before the edited message is sent: the original and everything after it go."""
        k, self.exchange = self.exchange, None
        if k is not None:
            self.screen.session.take_back(k)
            await self.screen.show_conversation(restart=False)
            self.screen.reset_prompt()

    def cancel(self) -> None:
        self.exchange = None
        self.screen.prompt.value = ""
        self.screen.reset_prompt()

    async def regenerate_focused(self) -> None:
        k = self._editable()
        if k is not None:
            await self.regenerate(k)

    async def regenerate_last(self) -> None:
        """Ctrl+G: write the last reply again."""
        screen = self.screen
        if screen.busy:
            screen.notify("a reply is being written: cancel it (Esc) first", severity="warning")
            return
        if not screen.session.user_positions():
            screen.notify("nothing to regenerate yet", severity="warning")
            return
        await self.regenerate(-1)

    async def regenerate(self, k: int) -> None:
        screen = self.screen
        session = screen.session
        if not session.loaded:
            screen.notify("no model is loaded yet", severity="warning")
            return
        text = session.take_back(k)
        await screen.show_conversation(restart=False)
        await screen.send(text)

    def delete_focused(self) -> None:
        k = self._editable()
        if k is None:
            return
        screen = self.screen
        start, stop = screen.session.exchange(k)

        async def done(yes: bool | None) -> None:
            if yes:
                gone = screen.session.delete_exchange(k)
                await screen.show_conversation(restart=False)
                screen.notify(f"deleted {gone} message{'s' if gone != 1 else ''}", timeout=2)
            screen.prompt.focus()  # kept or deleted: typing goes on in the prompt

        n = stop - start
        screen.app.push_screen(ConfirmScreen(f"Delete this message and the reply to it ({n} message"
                                             f"{'s' if n != 1 else ''} of the conversation)? The model will not see "
                                             "them again.  y: delete · n / Esc: keep"), done)
