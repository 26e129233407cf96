"""Tools from MCP servers (Model Context Protocol) beside the local tools: mcp.json, the official SDK as the
client on a background event loop, and an adapter that puts each server's tools into the Toolbox under the same
validation, approvals and output bounds as the built-ins."""

import logging

from localspec.mcp.manager import McpTools, ServerStatus, attach_servers
from localspec.mcp.servers_file import McpConfig, ServerConfig, default_config_path, load_mcp_config

__all__ = ["McpConfig", "McpTools", "ServerConfig", "ServerStatus", "attach_servers", "default_config_path",
           "load_mcp_config"]

# The SDK logs a server's protocol errors with tracebacks; without a handler, Python's last-resort handler would
# print them on stderr (over the app's screen). What went wrong reaches the user as one line instead.
logging.getLogger("mcp").addHandler(logging.NullHandler())
