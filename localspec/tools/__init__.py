"""Local tools for the agent: read/list/search files, atomic writes and edits, a bounded shell.

Everything goes through Toolbox.call(), which never raises; Policy decides what needs approval.
"""
from localspec.tools.limits import Limits
from localspec.tools.safety.approvals import ApprovalRequest, Approver, Decision, NotAsked
from localspec.tools.safety.danger import Danger, rate_shell, rate_write
from localspec.tools.safety.policy import MODES, Policy
from localspec.tools.tool_result import ToolError, ToolResult
from localspec.tools.toolbox import Toolbox

__all__ = [
    "ApprovalRequest", "Approver", "Danger", "Decision", "Limits", "MODES", "NotAsked", "Policy", "ToolError",
    "ToolResult", "Toolbox", "rate_shell", "rate_write",
]
