"""What one run of the app was started with (command-line choices; settings live in config.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class AppOptions:
    pair: str | None = None  # a catalog or user pair name (--pair)
    target: str | None = None  # explicit GGUF paths (--target/--draft) instead of a pair
    draft: str | None = None
    workspace: Path = field(default_factory=Path.cwd)  # where tools read, write and run
    max_tokens: int = 1024  # per model turn; tests lower it because tiny models never stop by themselves
    n_ctx: int = 8192
    n_threads: int = 0  # 0: one per core but one (see session.app_threads)
    config_path: Path | None = None  # None: the user's config.toml
    system_prompt: str | None = None  # None: the agent's default; "" for none
    tool_choice: str = "auto"  # first step of each turn: auto | required | none | a tool name (agent semantics)
    chat_template: str | None = None  # a Jinja file replacing the GGUF's own template (--chat-template)
    record: bool = True  # save the conversation (store) and the agent's JSONL transcript, in the data folder
    resume: str | None = None  # a saved conversation's ID to continue (--resume ID, --continue)
    mcp_config: Path | None = None  # MCP servers (--mcp-config FILE); None: mcp.json in the config folder
