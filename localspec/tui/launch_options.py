"""What one run of the app was started with (command-line choices; settings live in config.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from localspec.launch.flags import RunFlags

APP_MAX_TOKENS = 1024  # per model turn, unless --max-tokens says otherwise (a chat allows longer replies than `run`)


@dataclass
class AppOptions:
    # Which model and how it runs, drafts and samples: the same flags `localspec run` takes (tests lower
    # max_tokens because tiny models never stop by themselves).
    flags: RunFlags = field(default_factory=RunFlags)
    workspace: Path = field(default_factory=Path.cwd)  # where tools read, write and run
    config_path: Path | None = None  # None: the user's config.toml
    system_prompt: str | None = None  # None: the agent's default; "" for none
    tool_choice: str = "auto"  # first step of each turn: auto | required | none | a tool name (agent semantics)
    tools_on: bool = True  # new chats offer the tools (False: --no-tools; the settings' tools.enabled decides too)
    record: bool = True  # save the conversation (and its tool calls, for drafting) in the store, in the data folder
    resume: str | None = None  # a saved conversation's ID to continue (--resume ID, --continue)
    mcp_config: Path | None = None  # MCP servers (--mcp-config FILE); None: mcp.json in the config folder

    @property
    def max_tokens(self) -> int:
        """The most tokens one model turn may write, unless the conversation sets its own."""
        return self.flags.max_tokens or APP_MAX_TOKENS
