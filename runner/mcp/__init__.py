"""MCP servers (DESIGN sections 3 and 5): the extension format, and the hub that starts a task's
servers, lists their tools under the task's policy and routes calls to them.

`McpHub` serves the built-in workspace in-process (`runner.mcp.local`) and reaches every other
server over stdio, SSE or streamable HTTP (`runner.mcp.connection`, imported only when such a
server is configured: it is the one place the MCP SDK is imported). Importing this face imports
no SDK: task loading and `validate` never load it. Stdio servers are started before that import
(`runner.mcp.spawn`), so they boot while it runs.
"""

from __future__ import annotations

from runner.mcp.auth import AuthRecord, auth_secret_values
from runner.mcp.extension import WORKSPACE, ExtensionConfig, ToolPolicy, overlay
from runner.mcp.hub import McpHub
from runner.mcp.launch import builtin_workspace_root, server_env, workspace_extension
from runner.mcp.limits import RESERVED_TOOL_NAMES, McpLimits
from runner.mcp.policy import BUILTIN_TOOL_NAMES, Unmatched, tool_names, unmatched_patterns
from runner.mcp.render import HubEvent, policy_allows

__all__ = [
    "AuthRecord",
    "BUILTIN_TOOL_NAMES",
    "WORKSPACE",
    "ExtensionConfig",
    "RESERVED_TOOL_NAMES",
    "HubEvent",
    "McpHub",
    "McpLimits",
    "ToolPolicy",
    "Unmatched",
    "builtin_workspace_root",
    "overlay",
    "auth_secret_values",
    "policy_allows",
    "server_env",
    "tool_names",
    "unmatched_patterns",
    "workspace_extension",
]
