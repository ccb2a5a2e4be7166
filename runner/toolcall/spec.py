"""Tool specs and tool results: the shapes shared by the MCP hub, the prompt and the loop.

Kept free of any SDK so that the prompt builder and the loop can use them without importing mcp.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ATTEMPT_COMPLETION", "ToolResult", "ToolSpec"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call."""

    name: str
    """The name the model uses in its XML call (may be `server__tool` on a clash)."""
    description: str
    """What the tool does, as the server describes it."""
    input_schema: dict[str, Any] = field(default_factory=dict)
    """JSON Schema of the arguments: an object schema with `properties` and `required`."""
    server: str = ""
    """The MCP server that provides the tool; empty for the runner's own tools."""
    remote_name: str = ""
    """The name on the server, when it differs from `name` (a prefixed clash); else empty."""
    read_only: bool = False
    """The tool changes nothing (the server's `readOnlyHint` annotation): several calls of
    read-only tools in one reply may run at the same time (DESIGN section 16)."""

    @property
    def call_name(self) -> str:
        """The name to send to the server."""
        return self.remote_name or self.name


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gave back, already rendered as text for the model."""

    text: str
    is_error: bool = False
    denied: bool = False
    """The call never ran: a policy or permission rule refused it (`success.require` counts it)."""
    arguments: Mapping[str, Any] | None = None
    """The arguments the call ran with, when a pre_tool hook rewrote the model's; else None."""
    log_fields: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """Extra fields of the session log's `tool_call` event (a sub-agent's `child_session_id`)."""


ATTEMPT_COMPLETION = ToolSpec(
    name="attempt_completion",
    description=(
        "Finish the task. Call it once the work is done (or cannot be done) with a final result: "
        "what you did, what you found, or why you could not finish. The session ends with this "
        "call; no other tool call in the same message runs after it."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "result": {
                "type": "string",
                "description": "The final result of the task, complete in itself.",
            },
            "status": {
                "type": "string",
                "enum": ["success", "failure"],
                "description": "success if the task is done, failure if it could not be done.",
            },
        },
        "required": ["result"],
    },
)
