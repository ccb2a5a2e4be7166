"""Hub events, and turning MCP results and failures into text for the model."""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import mcp_types as types
from mcp.shared.exceptions import MCPError

from runner.extension import ToolPolicy
from runner.toolspec import ToolResult, ToolSpec

__all__ = [
    "MAX_RESULT_CHARS",
    "EventKind",
    "EventSink",
    "HubEvent",
    "bound_text",
    "policy_allows",
    "render_error",
    "render_result",
]

REQUEST_TIMEOUT = -32001
CONNECTION_CLOSED = -32000
MAX_RESULT_CHARS = 100_000
"""The most characters of one tool result the model gets (about 25k tokens); the rest is cut."""

EventKind = Literal["warning", "restart", "progress", "stderr"]


@dataclass(frozen=True)
class HubEvent:
    """Something the hub reports while it runs; the app logs it, nothing depends on it."""

    kind: EventKind
    """warning: an optional server was skipped or a server misbehaved; restart: a crashed server
    was started again; progress: a server's progress notification during a call; stderr: where a
    stdio server's stderr is written."""
    server: str
    """The server it is about."""
    message: str
    """One human-readable line."""
    tool: str = ""
    """progress: the tool being called."""
    path: Path | None = None
    """stderr: the log file."""
    progress: float | None = None
    """progress: the progress value the server sent."""
    total: float | None = None
    """progress: the total, when the server knows it."""


EventSink = Callable[[HubEvent], None]


def policy_allows(policy: ToolPolicy, spec: ToolSpec) -> bool:
    """Whether the policy lets the model call `spec`: deny wins over allow.

    A tool matches a pattern by its exposed name, its name on the server, or `server__tool`,
    so `deny: [execute_command]` also covers a clash-renamed `workspace__execute_command`.
    """
    names = {spec.name, spec.call_name, f"{spec.server}__{spec.call_name}"}

    def matches(patterns: Iterable[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, pat) for name in names for pat in patterns)

    return matches(policy.allow) and not matches(policy.deny)


def render_result(result: types.CallToolResult) -> ToolResult:
    """The result as text: text blocks as they are, other blocks as short placeholders."""
    parts = [_render_block(block) for block in result.content]
    text = "\n".join(part for part in parts if part)
    has_text = any(isinstance(block, types.TextContent) for block in result.content)
    if not has_text and result.structured_content is not None:
        structured = json.dumps(result.structured_content, ensure_ascii=False, indent=2)
        text = f"{text}\n{structured}" if text else structured
    if not text:
        text = "(the tool returned an error with no message)" if result.is_error else "(no output)"
    return ToolResult(text=text, is_error=bool(result.is_error))


def _render_block(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.uri}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return f"[resource: {res.uri}]\n{res.text}"
        return (
            f"[resource: {res.uri}, {res.mime_type or 'binary'}, {_decoded_size(res.blob)} bytes]"
        )
    return f"[{getattr(block, 'type', 'unknown')} content]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def render_error(exc: MCPError, *, tool: str, server: str, timeout_s: float) -> str:
    """A precise message for a JSON-RPC error raised by a tool call."""
    if exc.code == REQUEST_TIMEOUT:
        return (
            f"Error: tool {tool!r} on MCP server {server!r} timed out after {timeout_s:g} s "
            "and was abandoned. Try a smaller request, or a different approach."
        )
    return (
        f"Error: MCP server {server!r} rejected the call to {tool!r}: {exc.message} "
        f"(JSON-RPC error {exc.code})."
    )


def bound_text(text: str, limit: int) -> str:
    """`text` when it fits in `limit` characters; else its head and tail around a note.

    The head (four fifths) matters most for documents and JSON, the tail for logs. The whole
    result is not saved: the hub has no redactor, and an artifact must never hold a secret.
    """
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 4 // 5], text[len(text) - limit // 5 :]
    omitted = len(text) - len(head) - len(tail)
    return (
        f"{head}\n... [{omitted} characters of a {len(text)}-character tool result omitted; "
        f"ask the tool for a smaller part if you need more] ...\n{tail}"
    )
