"""Tool specs and tool results: the shapes shared by the MCP hub, the prompt and the loop.

Kept free of any SDK so that the prompt builder and the loop can use them without importing mcp.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ATTEMPT_COMPLETION", "ToolResult", "ToolSpec", "lean_schema"]


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
    description=("End the session with your final result."),
    input_schema={
        "type": "object",
        "properties": {
            "result": {
                "type": "string",
                "description": "Your final result, complete in itself.",
            },
            "status": {
                "type": "string",
                "enum": ["success", "failure"],
                "description": "failure if the task could not be done.",
            },
        },
        "required": ["result"],
    },
)


_NAME_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
"""Schema keys whose values map names (which may be anything, `title` too) to schemas."""


def lean_schema(schema: Any) -> Any:
    """`schema` as a request sends it (DESIGN 28): without what only documents it for people
    (pydantic's generated `title`s, a `default` of null), and an `anyOf` of one plain type and
    null written as a type list (`{"type": ["integer", "null"]}`), which means the same."""
    if isinstance(schema, list):
        return [lean_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: lean_schema(sub) for name, sub in value.items()}
        else:
            out[key] = lean_schema(value)
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and "type" not in out:
        kinds = [
            o.get("type") if isinstance(o, dict) and set(o) == {"type"} else None for o in options
        ]
        if "null" in kinds and all(isinstance(k, str) for k in kinds):
            del out["anyOf"]
            out["type"] = [k for k in kinds if k != "null"] + ["null"]
    return out
