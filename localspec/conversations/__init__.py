"""Saved conversations: an SQLite store in the user data dir (list, reopen, rename, delete, export).

Plain storage below the agent: messages are the chat-template dicts the agent keeps (role, content, tool_calls,
tool_call_id, name, ...); nothing here knows about models, events or Textual.
"""

from localspec.conversations.exports import EXPORT_FORMATS, available_path, default_export_path, export, render
from localspec.conversations.store import (
           Conversation,
           ConversationError,
           ConversationStore,
           default_db_path,
           find_saved,
           open_store,
           title_from,
)

__all__ = ["Conversation", "ConversationError", "ConversationStore", "EXPORT_FORMATS", "available_path",
           "default_db_path", "default_export_path", "export", "find_saved", "open_store", "render", "title_from"]
