"""What a task's session log opens with, and how its errors and tool drift are named.

Split from `runner.run.session.session` so that module keeps to the task's course; these are pure
functions of the task, the model and the resume point.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner import __version__
from runner.errors import McpServerError, ProviderError, RunnerError, SandboxUnavailable
from runner.llm import LLM
from runner.run.session.isolation import checkout_of
from runner.sessionlog import LogWriteError
from runner.task import Task
from runner.toolcall import ToolSpec

__all__ = ["error_kind", "session_header", "tool_drift"]


def session_header(
    task: Task,
    llm: LLM,
    run_id: str,
    parent_id: str | None,
    sandbox: dict[str, Any] | None,
    system: str,
    tools: Sequence[ToolSpec],
) -> dict[str, Any]:
    """The session log's header fields (the writer adds the version, ids, host and time)."""
    return {
        "run_id": run_id,
        "parent_id": parent_id,
        "runner_version": __version__,
        "task": task.record(),
        "task_file": str(task.file),
        "checkout": checkout_of(task, Path.cwd()),
        "model": f"{llm.provider}:{llm.model}",
        "sandbox": sandbox,
        "system_prompt": system,
        "tool_mode": "native" if task.spec.tool_mode == "native" else "xml",
        **({"sample": task.sample, "of": task.of} if task.of else {}),
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
                "server": t.server,
            }
            for t in tools
        ],
    }


def tool_drift(expected: Sequence[str], tools: Sequence[ToolSpec]) -> str | None:
    """The warning when a resumed session's tools differ from its parent's; None when equal."""
    now = {t.name for t in tools}
    before = set(expected)
    if now == before:
        return None
    changes = [
        f"{what} {', '.join(names)}"
        for what, names in (("added", sorted(now - before)), ("removed", sorted(before - now)))
        if names
    ]
    return f"tools drifted since the parent session: {'; '.join(changes)}"


def error_kind(error: RunnerError) -> str:
    """The outcome's `kind` for an operator error (subclasses included)."""
    if isinstance(error, ProviderError):
        return "provider"
    if isinstance(error, McpServerError):
        return "mcp"
    if isinstance(error, LogWriteError):
        return "artifacts"
    if isinstance(error, SandboxUnavailable):
        return "sandbox"
    return "config"
