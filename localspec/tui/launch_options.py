"""What one run of the app was started with: the agent session's options (agent/session.py), with the app's own
defaults."""

from __future__ import annotations

from dataclasses import dataclass

from localspec.agent.session import SessionOptions
from localspec.launch.run_config import APP_MAX_TOKENS


@dataclass
class AppOptions(SessionOptions):
    # Tests lower flags.max_tokens because tiny models never stop by themselves.
    default_max_tokens: int = APP_MAX_TOKENS
    interactive: bool = True  # the UI shares the machine: a core stays free for it unless threads are set
