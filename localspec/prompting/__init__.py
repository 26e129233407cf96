"""Chat templates (render a conversation with a GGUF's own template) and tool-call formats."""

from localspec.prompting.formats import ParseResult, ToolCall, ToolCallFormat, detect_format, get_format
from localspec.prompting.template import CHATML_TEMPLATE, prepare_messages, render_chat, template_caps

__all__ = [
    "CHATML_TEMPLATE",
    "ParseResult",
    "ToolCall",
    "ToolCallFormat",
    "detect_format",
    "get_format",
    "prepare_messages",
    "render_chat",
    "template_caps",
]
