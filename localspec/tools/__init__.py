"""Local tools for the agent: read/list/search files, atomic writes and edits, a bounded shell.

Everything goes through Toolbox.call(), which never raises; Policy decides what needs approval.
"""
from .approval import ApprovalRequest, Approver, Decision
from .danger import Danger, rate_shell, rate_write
from .limits import Limits
from .policy import MODES, Policy
from .result import ToolError, ToolResult
from .toolbox import Toolbox

__all__ = [
    "ApprovalRequest", "Approver", "Danger", "Decision", "Limits", "MODES", "Policy", "ToolError", "ToolResult",
    "Toolbox", "rate_shell", "rate_write",
]
