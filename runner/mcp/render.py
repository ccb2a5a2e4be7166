"""Hub events, the tool policy, and the text of results and failures every connection shares.

Free of the MCP SDK, so that a task using only the in-process workspace never imports it; the
rendering of MCP result objects is in `runner.mcp.results`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runner.mcp.extension import ToolPolicy
from runner.toolcall import ToolSpec

__all__ = [
    "MAX_RESULT_CHARS",
    "ConnectionLost",
    "StartFailure",
    "EventKind",
    "EventSink",
    "HubEvent",
    "bound_text",
    "policy_allows",
    "timeout_text",
]

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


def timeout_text(*, tool: str, server: str, timeout_s: float) -> str:
    """What the model reads when a call ran out of time."""
    return (
        f"Error: tool {tool!r} on MCP server {server!r} timed out after {timeout_s:g} s "
        "and was abandoned. Try a smaller request, or a different approach."
    )


class StartFailure(Exception):
    """A server could not be started, connected to, or listed; the message says which step.

    `config`: the cause is the task's configuration (a wrong secret, a grant the server's
    authorization server does not offer), so the run ends with exit 2 even for an optional
    server, rather than exit 4 for an outage."""

    def __init__(self, message: str, *, config: bool = False) -> None:
        super().__init__(message)
        self.config = config


class ConnectionLost(Exception):
    """A call found its server gone (crashed, exited, unreachable); the hub may restart it."""


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
