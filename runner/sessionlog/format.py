"""The session log's contract: format version, header, session ids, timestamps and errors.

Shared by the writer (`runner.sessionlog.writer`) and the reader (`runner.sessionlog.reader`);
other wings import all three through `runner.sessionlog`. The format: docs/session-log.md and
docs/session-log.schema.json.
"""

from __future__ import annotations

import copy
import getpass
import hashlib
import platform
import re
import secrets
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from runner import __version__
from runner.errors import ConfigError, ExitCode, RunnerError
from runner.toolcall import ToolSpec

__all__ = [
    "FORMAT_VERSION",
    "EVENT_TYPES",
    "CompactionKind",
    "Clock",
    "Header",
    "LogReadError",
    "LogWriteError",
    "host_facts",
    "iso_utc",
    "new_session_id",
    "prompt_sha256",
]

FORMAT_VERSION = 1
"""The version this runner writes, and the newest it reads. Bump it when a field is removed,
renamed or changes meaning; adding an optional field or event type does not bump it."""

EVENT_TYPES = (
    "header",
    "message",
    "model_call",
    "tool_call",
    "compaction",
    "resume",
    "check",
    "retry",
    "hook",
    "network",
    "finding",
    "grade",
    "warning",
    "end",
)
"""Every `type` a version-1 line can have."""

CompactionKind = Literal["clear_tool_results", "summary"]
"""How the context was compacted: old tool results cleared, or older turns summarised."""

Clock = Callable[[], datetime]
"""Returns the current time as an aware datetime; injectable so tests can fix it."""


class LogWriteError(RunnerError):
    """A session log, spill file or prompt file cannot be written (unwritable folder, full disk)."""

    exit_code = ExitCode.INFRASTRUCTURE

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        why = error.strerror or str(error)
        super().__init__(
            f"cannot write session log file {path}: {why} "
            "(check that the --out folder is writable and its disk has space)"
        )


class LogReadError(ConfigError):
    """A session log given to `resume` or `log` cannot be read; nothing ran."""

    def __init__(self, path: Path, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a `Z`: `2025-01-31T12:00:00.000Z`."""
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def _now() -> datetime:
    return datetime.now(UTC)


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    # Long task names would make unwieldy file names; the hex suffix keeps ids unique anyway.
    return slug[:40].rstrip("-") or "task"


def new_session_id(task_name: str, now: datetime | None = None) -> str:
    """A sortable, unique id: `YYYYMMDDTHHMMSSZ-<task-name-slug>-<6 hex>`."""
    stamp = (now or _now()).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{_slug(task_name)}-{secrets.token_hex(3)}"


def prompt_sha256(prompt: str) -> str:
    """The hex SHA-256 of a prompt's UTF-8 bytes: its file name under `<out>/prompts/`."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def host_facts() -> dict[str, str]:
    """Where the session ran: os, python, hostname, user, cwd."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, as in some containers
        user = ""
    return {
        "os": f"{platform.system()} {platform.release()}".strip(),
        "python": platform.python_version(),
        "hostname": socket.gethostname(),
        "user": user,
        "cwd": str(Path.cwd()),
    }


def _tool_dict(tool: ToolSpec | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(tool, ToolSpec):
        return {
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.input_schema,
            "server": tool.server,
        }
    return {
        "name": str(tool["name"]),
        "description": str(tool.get("description", "")),
        "input_schema": dict(tool.get("input_schema", {})),
        "server": str(tool.get("server", "")),
    }


@dataclass(frozen=True)
class Header:
    """What a session started with: the first line of its log (as `{"type": "header", ...}`)."""

    run_id: str
    """The `run`/`resume` invocation this session belongs to."""
    task: dict[str, Any]
    """The resolved task (defaults and params applied), as a JSON object; redacted when written."""
    model: str
    """`provider:model` the session talks to."""
    system_prompt: str
    """The rendered system prompt; redacted when written."""
    tools: Sequence[ToolSpec | Mapping[str, Any]] = ()
    """The tools offered to the model; written as `{name, description, input_schema, server}`."""
    session_id: str = ""
    """This session's id; empty means a new one is made from the task's `name`."""
    parent_id: str | None = None
    """The session this one resumes, or None for a fresh session."""
    task_file: str = ""
    """The file the task came from."""
    task_hashes: Mapping[str, str] | None = None
    """The SHA-256 of each executable part of the task (DESIGN 24): `resume` refuses a task file
    whose parts differ. Optional: logs from before it have none and resume unchecked."""
    checkout: Mapping[str, Any] | None = None
    """Where the task ran: `root` (the git work tree holding the task file) and `task_file` and
    `workdir` relative to it; `resume` finds them again in the checkout where it runs. Optional:
    logs written without it are resumed through `host.cwd`."""
    sandbox: Mapping[str, Any] | None = None
    """What confined the task's commands (`runner.outcome.SandboxRecord.as_json`); optional."""
    runner_version: str = __version__
    """The agent-runner version that wrote the log."""
    host: dict[str, str] = field(default_factory=host_facts)
    """os, python, hostname, user, cwd."""
    started_at: str = ""
    """ISO 8601 UTC start time; empty means the writer's clock at creation."""
    parent_session_id: str | None = None
    """A sub-agent's session: the session whose `sub_agent` call started it (DESIGN 13)."""
    parent_call: dict[str, Any] | None = None
    """A sub-agent's session: that call, as `{turn, index, agent, task}` (`index` counts the
    reply's sub_agent calls from 0)."""
    tool_mode: str = "xml"
    """How the session calls tools: `xml` or `native` (DESIGN 16); a log resumes in its mode."""
    sample: int | None = None
    """A sample of a repeated task (DESIGN 22): which one, from 1; written with `of` only then."""
    of: int | None = None
    """A sample of a repeated task: the task's number of samples, K."""
    mcp_auth: list[dict[str, Any]] | None = None
    """Which auth each MCP server with `auth:` used (DESIGN 26): `{server, type, issuer, scopes,
    expires_at, renewals}` as at the start; never a token. Written only when a server has one."""
    loaded_tools: list[str] = field(default_factory=list)
    """A resumed session: the deferred tools its parents loaded with find_tools (DESIGN 28);
    written only when there are some."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Header:
        """A header from a dict of its fields; `type`, `version` and `system_prompt_sha256` are
        ignored (the writer sets them). An unknown key is a bug and raises TypeError."""
        names = {f.name for f in fields(cls)}
        computed = {"type", "version", "system_prompt_sha256"}
        unknown = sorted(set(data) - names - computed)
        if unknown:
            raise TypeError(f"unknown session log header fields: {', '.join(unknown)}")
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_line(self) -> dict[str, Any]:
        """The header line's JSON object, before redaction (the prompt hash is added after)."""
        return {
            "type": "header",
            "version": FORMAT_VERSION,
            "session_id": self.session_id,
            "parent_id": self.parent_id,
            "run_id": self.run_id,
            "runner_version": self.runner_version,
            "task": copy.deepcopy(self.task),
            "task_file": self.task_file,
            **({"task_hashes": dict(self.task_hashes)} if self.task_hashes is not None else {}),
            **({"checkout": dict(self.checkout)} if self.checkout is not None else {}),
            "model": self.model,
            **({"sandbox": dict(self.sandbox)} if self.sandbox is not None else {}),
            "system_prompt": self.system_prompt,
            "system_prompt_sha256": "",
            "tools": [_tool_dict(t) for t in self.tools],
            # Written for native sessions only: a log without it is xml, as older logs are.
            **({"tool_mode": self.tool_mode} if self.tool_mode != "xml" else {}),
            "host": dict(self.host),
            "started_at": self.started_at,
            **({"sample": self.sample, "of": self.of} if self.of else {}),
            **({"mcp_auth": copy.deepcopy(self.mcp_auth)} if self.mcp_auth else {}),
            **({"loaded_tools": list(self.loaded_tools)} if self.loaded_tools else {}),
            **(
                {"parent_session_id": self.parent_session_id, "parent_call": self.parent_call}
                if self.parent_session_id
                else {}
            ),
        }
