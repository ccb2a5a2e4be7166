"""Bounds on what MCP servers hand the runner, and the names their tools are exposed under.

A server's stdout line, each tool description and the whole catalogue are capped (settings
`mcp_max_message_chars`, `mcp_max_description_chars`, `mcp_max_catalogue_chars`): a 100 MB tool
description once made every model request 104 MB. Tool names are the model's XML tags and lines of
the prompt, so a name that is not plain (`[A-Za-z0-9_.-]`), or that takes a built-in name
(attempt_completion, the workspace tools, sub_agent, load_skill), is exposed as `server__tool`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.mcp.extension import WORKSPACE
from runner.settings import Settings
from runner.toolcall import ATTEMPT_COMPLETION
from runner.workspace import DESCRIPTIONS

__all__ = ["DEFAULT_LIMITS", "RESERVED_TOOL_NAMES", "Catalogue", "McpLimits", "exposed_name"]

RESERVED_TOOL_NAMES = frozenset({ATTEMPT_COMPLETION.name, *DESCRIPTIONS, "sub_agent", "load_skill"})
"""Names only the runner's own tools (and the built-in workspace's) are exposed under."""

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_NOT_PLAIN = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class McpLimits:
    """The size limits of one hub; the defaults are the settings' defaults."""

    max_message_chars: int = 256 * 1024 * 1024
    """Longest stdout line of a stdio server."""
    max_description_chars: int = 10_000
    """Longest tool description kept; the rest is cut with a note."""
    max_catalogue_chars: int = 250_000
    """Descriptions and schemas of all tools together; tools past it are dropped."""
    connect_attempts: int = 6
    """Attempts to reach a remote (sse, streamable_http) server that is unreachable or answers
    429/5xx, as a provider is retried (the `retry` settings)."""
    connect_backoff_s: float = 1.0
    """First wait between those attempts; it doubles per attempt."""
    connect_max_backoff_s: float = 30.0
    """Longest wait between those attempts."""

    @classmethod
    def from_settings(cls, settings: Settings) -> McpLimits:
        return cls(
            max_message_chars=settings.mcp_max_message_chars,
            max_description_chars=settings.mcp_max_description_chars,
            max_catalogue_chars=settings.mcp_max_catalogue_chars,
            connect_attempts=settings.retry.max_attempts,
            connect_backoff_s=settings.retry.initial_backoff_s,
            connect_max_backoff_s=settings.retry.max_backoff_s,
        )


DEFAULT_LIMITS = McpLimits()


def _plain(text: str) -> str:
    return _NOT_PLAIN.sub("_", text)[:64].strip("_") or "tool"


def exposed_name(server: str, tool: str, clash: bool) -> str:
    """The name the model calls `tool` of `server` by.

    The tool's own name when it is plain, free and not shared; else `server__tool`, made plain.
    The built-in workspace keeps its names; anyone else's tool of a reserved name is renamed.
    """
    owner = server == WORKSPACE and tool in DESCRIPTIONS
    reserved = tool in RESERVED_TOOL_NAMES and not owner
    if _PLAIN_NAME.fullmatch(tool) and not reserved and (owner or not clash):
        return tool
    return f"{_plain(server)}__{_plain(tool)}"


@dataclass
class Catalogue:
    """Fills the catalogue server by server, within the limits; says what it cut or dropped."""

    limits: McpLimits
    used: int = 0
    warnings: list[tuple[str, str]] = field(default_factory=list)
    """(server, message) for each server that lost something."""

    def admit(
        self, server: str, tools: Iterable[tuple[str, str, Mapping[str, Any]]]
    ) -> list[tuple[str, str, dict[str, Any]]]:
        """The (name, description, schema) of `server`'s tools that fit, descriptions cut."""
        limit = self.limits.max_description_chars
        kept: list[tuple[str, str, dict[str, Any]]] = []
        cut = dropped = 0
        for name, listed, schema in tools:
            description = listed
            if len(listed) > limit:
                cut += 1
                description = listed[:limit] + f"\n(Description cut at {limit} characters.)"
            size = len(name) + len(description) + len(json.dumps(schema, default=str))
            if self.used + size > self.limits.max_catalogue_chars:
                dropped += 1
                continue
            self.used += size
            kept.append((name, description, dict(schema)))
        if cut:
            self.warnings.append(
                (
                    server,
                    f"MCP server {server!r}: {cut} tool description(s) cut at {limit} "
                    "characters (the mcp_max_description_chars setting)",
                )
            )
        if dropped:
            self.warnings.append(
                (
                    server,
                    f"MCP server {server!r}: {dropped} tool(s) dropped: the tool catalogue "
                    f"passed {self.limits.max_catalogue_chars} characters (the "
                    "mcp_max_catalogue_chars setting)",
                )
            )
        return kept
