"""Turning MCP result objects and JSON-RPC errors into text for the model."""

from __future__ import annotations

import base64
import binascii
import json

import mcp_types as types
from mcp.shared.exceptions import MCPError

from runner.mcp.render import timeout_text
from runner.toolcall import ToolResult

__all__ = ["CONNECTION_CLOSED", "REQUEST_TIMEOUT", "render_error", "render_result"]

REQUEST_TIMEOUT = -32001
CONNECTION_CLOSED = -32000


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
        return timeout_text(tool=tool, server=server, timeout_s=timeout_s)
    return (
        f"Error: MCP server {server!r} rejected the call to {tool!r}: {exc.message} "
        f"(JSON-RPC error {exc.code})."
    )
