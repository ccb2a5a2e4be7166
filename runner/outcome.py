"""What a finished task and a finished run look like: the records the reports are built from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runner.errors import ExitCode

__all__ = ["RunSummary", "SandboxRecord", "Status", "TaskOutcome", "Totals"]

Status = Literal["passed", "failed", "budget_exceeded", "error", "interrupted"]
"""How a task ended; the same words as the session log's `end` event."""


@dataclass(frozen=True)
class SandboxRecord:
    """What confined a task's commands (DESIGN 15): the log header, JUnit and summary say it."""

    status: Literal["enforced", "degraded", "unavailable", "off"]
    """`enforced` by a backend; `degraded`: `auto` found no backend and ran unconfined;
    `unavailable`: `required` found none, so the task did not run; `off`: not asked for."""
    backend: str = ""
    """`bwrap` or `landlock` when enforced."""
    reason: str = ""
    """Why no backend works (degraded, unavailable)."""
    network: bool = False
    """Commands had the host's network (always, unless enforced)."""
    writable: tuple[str, ...] = ()
    """Folders writable besides the workdir and the private HOME and TMPDIR."""
    enforced: tuple[str, ...] = ()
    """The properties the run's probe tried and found held (DESIGN 18): `fs`, `caps`, `net`,
    `pid`, `sockets` (`net` only when the task has no network)."""
    missing: tuple[str, ...] = ()
    """The properties the probe tried and found not held (`reason` says what it managed); all
    of them when `degraded`."""

    def line(self) -> str:
        """`sandbox: enforced (bwrap); network: off; writable: workdir; confined: fs, ...`."""
        head = {
            "enforced": f"enforced ({self.backend})",
            "degraded": f"degraded ({self.reason})",
            "unavailable": f"unavailable ({self.reason})",
            "off": "off",
        }[self.status]
        if self.status != "enforced":
            return f"sandbox: {head}"
        writable = ", ".join(("workdir", *self.writable))
        line = f"sandbox: {head}; network: {'on' if self.network else 'off'}; writable: {writable}"
        if self.enforced:
            line += f"; confined: {', '.join(self.enforced)}"
        if self.missing:
            line += f"; not confined: {', '.join(self.missing)} ({self.reason})"
        return line

    def as_json(self) -> dict[str, Any]:
        """The record as plain data (session log header, summary.json)."""
        return {
            "status": self.status,
            "backend": self.backend or None,
            "reason": self.reason or None,
            "network": self.network,
            "writable": list(self.writable),
            "enforced": list(self.enforced),
            "missing": list(self.missing),
        }


@dataclass(frozen=True)
class Totals:
    """Counters of one task, or of a whole run."""

    turns: int = 0
    """Model calls that produced an assistant message."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    tool_calls: int = 0
    duration_s: float = 0.0

    @property
    def tokens(self) -> int:
        """All tokens, input (cached or not) and output, as `limits.max_tokens` counts them."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            turns=self.turns + other.turns,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            tool_calls=self.tool_calls + other.tool_calls,
            duration_s=self.duration_s + other.duration_s,
        )


@dataclass(frozen=True)
class TaskOutcome:
    """The end of one task, as the reports show it."""

    name: str
    """The task's unique name."""
    task_file: Path
    """The file the task came from (a suite file holds several tasks)."""
    status: Status
    reason: str = ""
    """Why it ended so: the failed check, the limit hit, the error message (redacted)."""
    result: str = ""
    """The `attempt_completion` result, when the agent got that far."""
    kind: str = ""
    """A short machine-readable cause: `turns`/`tokens`/`cost`/`time`/`run_cost` for
    budget_exceeded, `check`/`expect`/`requirement`/`agent`/`no_tool_call` for failed,
    `provider`/`mcp`/`artifacts`/`config`/`internal` for error, `signal` for interrupted."""
    exit_code: ExitCode = ExitCode.OK
    """This task's own exit code (DESIGN section 2)."""
    model: str = ""
    totals: Totals = field(default_factory=Totals)
    session_log: Path | None = None
    """The JSONL session log, when one was written."""
    session_id: str = ""
    check_output: str = ""
    """The end (about 4 KB) of the failed success check's output (redacted); "" otherwise."""
    structured_result: Any = None
    """The result parsed as JSON, for a passed task whose result fits
    `success.expect.json_schema` (redacted); None otherwise."""
    child_sessions: tuple[str, ...] = ()
    """Session ids of the task's sub-agents (their tokens and cost are in `totals`)."""
    sandbox: SandboxRecord | None = None
    """What confined the task's commands; None when the task never got that far."""
    patch: Path | None = None
    """`isolation: worktree`: the task's change, `<out>/patches/<task>.patch` (None: no change)."""
    worktree: Path | None = None
    """`isolation: worktree` with `--keep-worktrees`: the worktree, left in place."""


@dataclass(frozen=True)
class RunSummary:
    """A whole `run` or `resume` invocation."""

    run_id: str
    runner_version: str
    model: str
    outcomes: list[TaskOutcome]
    exit_code: ExitCode
    out_dir: Path
    junit_path: Path | None = None

    @property
    def totals(self) -> Totals:
        total = Totals()
        for outcome in self.outcomes:
            total = total + outcome.totals
        return total

    @property
    def passed(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "passed")

    @property
    def failed(self) -> int:
        return len(self.outcomes) - self.passed
