"""Tool-call arguments as the app shows them (tool cards, approvals). Saved conversations and their Markdown and
JSON exports live in localspec.conversations (Ctrl+S, `localspec sessions export`)."""

from __future__ import annotations

import json


def arguments_json(arguments) -> str:
    return json.dumps(arguments, ensure_ascii=False, indent=2)
