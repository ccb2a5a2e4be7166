"""Tool calls as text (DESIGN section 4): what a tool is (`ToolSpec`, `ToolResult`), scanning a
model's reply for XML calls, coercing their string arguments to the tool's schema, and rendering
calls, results and call errors back to the model; `native` checks the JSON arguments of native
tool calls the same way.

Pure text: no SDK and no I/O. `parse_reply` is the entry point; `runner.toolcall.scan` finds the
calls and `runner.toolcall.coerce` types their arguments.
"""

from __future__ import annotations

from runner.toolcall.coerce import CoercionError, coerce_arguments
from runner.toolcall.native import NATIVE_REMINDER, native_call, native_usage
from runner.toolcall.reply import (
    REMINDER,
    CallError,
    ParsedReply,
    ToolCall,
    parse_reply,
    render_call,
    render_call_error,
    render_call_errors,
    render_result,
    render_usage,
)
from runner.toolcall.spec import ATTEMPT_COMPLETION, ToolResult, ToolSpec, lean_schema

__all__ = [
    "ATTEMPT_COMPLETION",
    "NATIVE_REMINDER",
    "REMINDER",
    "CallError",
    "CoercionError",
    "ParsedReply",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "coerce_arguments",
    "native_call",
    "native_usage",
    "parse_reply",
    "render_call",
    "render_call_error",
    "render_call_errors",
    "render_result",
    "render_usage",
    "lean_schema",
]
