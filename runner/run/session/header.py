"""What a task's session log opens and ends with, and how its errors and tool drift are named.

Split from `runner.run.session.session` so that module keeps to the task's course; these are pure
functions of the task, the model and the resume point.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner import __version__
from runner.errors import McpServerError, ProviderError, RunnerError, SandboxUnavailable
from runner.llm import LLM, Message, NativeResult
from runner.outcome import Finding, Status, Totals
from runner.prompt import ToolShelf, loaded_announcement
from runner.run.session.isolation import checkout_of
from runner.run.turn import Budget, native_fields
from runner.sessionlog import LogWriteError, SessionLogWriter
from runner.settings import Settings
from runner.task import Task
from runner.toolcall import ToolSpec

__all__ = [
    "CONFIG_PART",
    "EXECUTABLE_PARTS",
    "ResumePoint",
    "end_log",
    "error_kind",
    "opening_messages",
    "session_header",
    "task_hashes",
    "tool_drift",
    "totals_of",
]


@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed session picks up."""

    parent_id: str
    messages: list[Message]
    """The parent's context, compactions applied."""
    message: str
    """The one user message appended."""
    budget_used: Totals = field(default_factory=Totals)
    """What the parent spent: limits are cumulative across resumes."""
    expected_tools: tuple[str, ...] = ()
    """The parent's tool names, to warn when the tools drifted."""
    worktree: dict[str, str] | None = None
    """The parent ran in a worktree: its `head` and `patch` (runner.run.session.isolation)."""
    results: tuple[NativeResult, ...] = ()
    """Native mode: results the appended message owes the parent's last calls."""
    findings: tuple[Finding, ...] = ()
    """The parent's findings (DESIGN 21): the resumed task reports them with its own."""
    loaded_tools: tuple[str, ...] = ()
    """Deferred tools the parent loaded with find_tools (DESIGN 28): they stay loaded."""


EXECUTABLE_PARTS = (
    "extensions",
    "hooks",
    "success",
    "sandbox",
    "permissions",
    "tools",
    "agents",
    "skills",
)
"""The parts of a task that decide what runs (DESIGN 24): `resume` refuses a task whose parts
differ from the session's (`task_hashes` in the header) unless `--accept-task-changes`."""

CONFIG_PART = "config"
"""The config file's share of what runs, hashed beside the task's parts: `./agent-runner.yaml`
usually sits in the repository the agent may write, and its MCP servers, hooks, agents and
sandbox reach every task."""

CONFIG_KEYS = ("extensions", "hooks", "agents", "sandbox")
"""The settings behind `CONFIG_PART`: what starts programs or confines them."""


def _sha256(value: Any) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()


def task_hashes(task: Task, mask: Callable[[Any], Any], settings: Settings) -> dict[str, str]:
    """The SHA-256 of each executable part of `task` as its file says it (params filled in,
    `${VAR}` not resolved: the same file in another environment hashes the same), and of the
    config's `CONFIG_KEYS` as `CONFIG_PART`, after `mask` (the redactor: no secret is hashed).
    `success` covers `check_env` too."""
    written = mask(task.spec.model_dump(mode="json"))
    written["success"] = {"success": written.get("success"), "check_env": written.get("check_env")}
    hashes = {part: _sha256(written.get(part)) for part in EXECUTABLE_PARTS}
    config = settings.model_dump(mode="json", include=set(CONFIG_KEYS))
    hashes[CONFIG_PART] = _sha256(mask(config))
    return hashes


def session_header(
    task: Task,
    llm: LLM,
    run_id: str,
    parent_id: str | None,
    sandbox: dict[str, Any] | None,
    system: str,
    tools: Sequence[ToolSpec],
    settings: Settings,
    mask: Callable[[Any], Any] = lambda data: data,
) -> dict[str, Any]:
    """The session log's header fields (the writer adds the version, ids, host and time)."""
    return {
        "run_id": run_id,
        "parent_id": parent_id,
        "runner_version": __version__,
        "task": task.record(),
        "task_file": str(task.file),
        "task_hashes": task_hashes(task, mask, settings),
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


def end_log(
    log: SessionLogWriter | None,
    status: Status,
    reason: str,
    totals: Totals,
    result: str,
    kind: str,
) -> LogWriteError | None:
    """Write the log's end line and close it; the error when the log cannot be written."""
    if log is None or log.ended:
        return None
    try:
        log.end(status, reason, totals, result or None, kind=kind)
    except LogWriteError as error:
        with contextlib.suppress(LogWriteError):
            log.close()
        return error
    return None


def totals_of(budget: Budget, started: float) -> Totals:
    """The task's totals from its budget, timed from `started` (`time.monotonic()`)."""
    usage = budget.usage
    return Totals(
        turns=budget.turns,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost_usd=round(budget.cost_usd, 6),
        tool_calls=budget.tool_calls,
        duration_s=round(time.monotonic() - started, 3),
        system_tokens=budget.requested.system,
        tools_tokens=budget.requested.tools,
        messages_tokens=budget.requested.messages,
    )


def opening_messages(
    task: Task,
    resume: ResumePoint | None,
    shelf: ToolShelf,
    log: SessionLogWriter,
    opening: str,
    tools: list[ToolSpec],
    native: bool,
    turn: int,
) -> list[Message]:
    """The context the first model call gets, logged: the task, or the parent's context and the
    message that resumes it (naming the tools it had loaded, DESIGN 28)."""
    if resume is None:
        log.message("user", task.prompt + opening, 0)
        return [Message("user", task.prompt + opening)]
    log.resume(resume.parent_id, [m.record() for m in resume.messages])
    if shelf.loaded:  # their definitions may have been compacted away
        offered = {t.name for t in tools}
        why = "The session resumes"
        opening += "\n\n" + loaded_announcement(shelf, native, offered, why)
    first = Message("user", resume.message + opening, results=resume.results)
    # Turns continue from the parent's: the new message belongs to its last turn.
    log.message("user", first.content, turn, **native_fields(first))
    return [*resume.messages, first]
