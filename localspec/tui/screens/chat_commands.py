"""The chat's commands, typed in the prompt: `/tool NAME [message]` makes the next message (or this one) call a tool,
`/tools on|off` offers the tools or not. Any other text starting with "/" is a message like any other."""

from __future__ import annotations

from localspec.tui.screens.chat_view import ChatView

COMMANDS = ("/tool", "/tools")


def command_of(text: str) -> tuple[str, str] | None:
    """(command, the rest) when `text` is one of the chat's commands."""
    command = text.split(maxsplit=1)[0] if text.startswith("/") else ""
    return (command, text[len(command):].strip()) if command in COMMANDS else None


class ChatCommands:
    def __init__(self, screen: ChatView) -> None:
        self.screen = screen

    async def run(self, command: str, rest: str) -> None:
        screen = self.screen
        if command == "/tools":
            if rest not in ("on", "off"):
                await screen.add_message("note", "/tools on or /tools off: whether this chat offers the tools (F6)")
                return
            self.set_tools(rest == "on")
            return
        names = screen.session.tool_names()
        if not rest:
            await screen.add_message("note", "/tool NAME [message]: the next message must call NAME (the model "
                                             "fills in the arguments). Tools: " + ", ".join(names))
            return
        name, _, message = rest.partition(" ")
        if name not in names:
            await screen.add_message("error", f"no tool {name!r}; the tools are: {', '.join(names)}")
            return
        await self.use_tool(name, message.strip())

    async def use_tool(self, name: str, message: str = "") -> None:
        """Make the next message (or `message`, sent now) call the tool `name`: the agent seen at work with any
        model, even one too small to choose a tool by itself."""
        screen = self.screen
        session = screen.session
        if message:
            if screen.busy or not session.loaded:
                screen.notify("wait for the reply (or the model) before sending", severity="warning")
                return
            await screen.send(message, tool=name)
            return
        session.next_tool = name
        if not session.tools_on:
            self.set_tools(True, quiet=True)
        screen.refresh_header()
        screen.notify(f"your next message calls {name}", timeout=3)

    def set_tools(self, on: bool, *, quiet: bool = False) -> None:
        """Tools on or off for this chat (F6, /tools on|off)."""
        screen = self.screen
        session = screen.session
        session.tools_on = on
        if not on:
            session.next_tool = None
        screen.refresh_header()
        if not quiet:
            screen.notify("tools on: the model may call the tools" if on else
                          "tools off for this chat: the model only answers (a short prompt, a fast first token)",
                          timeout=3)
