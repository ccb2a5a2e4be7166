"""The runner's `report_finding` tool (DESIGN 21): how it is described, the executor that serves
it around the task's own, and the gate (`--fail-on`) that fails a task on its findings.

`FindingsTools` lists tools as the hub does, with `report_finding` added, so the sub-agents'
executor wraps it: a child's findings land in the same `FindingSink`, its parent task's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runner.outcome import SEVERITIES, Finding
from runner.run.guard.executor import Hub
from runner.run.guard.findcheck import FindingLimits, check_finding, repository_root
from runner.task import FindingsSpec, Task
from runner.toolcall import ToolResult, ToolSpec

__all__ = [
    "REPORT_FINDING",
    "FindingSink",
    "FindingsTools",
    "fail_on_of",
    "findings_gate",
    "report_finding_spec",
    "with_config_findings",
]

REPORT_FINDING = "report_finding"
"""The tool through which an agent reports a review finding."""

_GATE_LISTED = 5
"""Findings named in the reason of a task the gate fails."""


def report_finding_spec() -> ToolSpec:
    """The `report_finding` tool."""
    text = {"type": "string"}
    return ToolSpec(
        name=REPORT_FINDING,
        description=(
            "Report one review finding on lines of a file of the working directory. Each call "
            "is one finding: a problem you are sure of, with the lines it is on. The findings "
            "become the review's comments and code scanning alerts. Call it once per finding "
            "(several calls may go in one message), then finish with attempt_completion."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {**text, "description": "The file, relative to the working directory."},
                "line": {"type": "integer", "description": "First line of the finding (1-based)."},
                "end_line": {"type": "integer", "description": "Last line; default: `line`."},
                "severity": {
                    "type": "string",
                    "enum": list(SEVERITIES),
                    "description": "error: must be fixed; warning: should be; note: a remark.",
                },
                "title": {**text, "description": "One short line naming the problem."},
                "message": {**text, "description": "What is wrong, why, and how to fix it."},
                "suggestion": {
                    **text,
                    "description": "Optional: the replacement text for lines line..end_line, "
                    "exactly as they should read.",
                },
            },
            "required": ["path", "line", "severity", "title", "message"],
        },
    )


class FindingLog(Protocol):
    """Where accepted findings are logged (`runner.sessionlog.SessionLogWriter` fits)."""

    def finding(self, finding: Finding, turn: int) -> None: ...


class Resumed(Protocol):
    """A resumed session's start (`runner.run.session.ResumePoint` fits)."""

    @property
    def findings(self) -> tuple[Finding, ...]: ...


@dataclass
class FindingSink:
    """The findings of one task, its sub-agents' included, in the order they were accepted.

    A task without `findings:` has a sink that is off (`workdir` None): it offers no tool, wraps
    no executor, gates nothing and reports None, so a session needs no branch of its own.
    """

    workdir: Path | None
    """The task's workdir; None when the task did not ask for findings."""
    mask: Callable[[str], str] = str
    """Hides the task's secrets in what the agent wrote."""
    log: FindingLog | None = None
    turn: Callable[[], int] = lambda: 0
    fail_on: str = "never"
    """The task's own gate (`findings.fail_on`); `--fail-on` overrides it."""
    findings: list[Finding] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        task: Task,
        mask: Callable[[str], str],
        turn: Callable[[], int],
        resume: Resumed | None = None,
    ) -> FindingSink:
        """The task's sink; a resumed session starts with its parent's findings."""
        if task.spec.findings is None:
            return cls(None)
        earlier = list(resume.findings) if resume is not None else []
        return cls(task.workdir, mask, None, turn, fail_on_of(task, None), earlier)

    def tools(self, own: Sequence[ToolSpec]) -> list[ToolSpec]:
        """`own` plus `report_finding` when the task asked for findings."""
        return [*own, report_finding_spec()] if self.workdir is not None else list(own)

    def wrap(self, executor: Hub, log: FindingLog | None) -> Hub:
        """`executor`, serving `report_finding` too (logged to `log`) when it is on."""
        if self.workdir is None:
            return executor
        self.log = log
        for finding in self.findings:
            # A resumed session's log holds its parent's findings too: each log has them all.
            if log is not None:
                log.finding(finding, self.turn())
        return FindingsTools(executor, self)

    def gate(self, override: str | None) -> str | None:
        """Why the findings fail the task (`--fail-on` is `override`), or None."""
        return findings_gate(self.findings, override or self.fail_on)

    def result(self) -> tuple[Finding, ...] | None:
        """The findings for the task's outcome; None when the task did not ask for them."""
        return tuple(self.findings) if self.workdir is not None else None

    def accept(self, arguments: dict[str, Any]) -> ToolResult:
        """Check one call; log and keep the finding, or say what to fix."""
        if len(self.findings) >= FindingLimits.per_task:
            return ToolResult(
                f"Error: this task already has {FindingLimits.per_task} findings, the most it "
                "keeps; no more are recorded. Finish with attempt_completion.",
                is_error=True,
            )
        masked = {
            key: self.mask(value) if isinstance(value, str) else value
            for key, value in arguments.items()
        }
        if self.workdir is None:  # not offered; a call anyway is refused like an unknown tool
            return ToolResult(f"Error: no tool named {REPORT_FINDING!r} in this task.", True)
        checked = check_finding(masked, self.workdir, repository_root(self.workdir))
        if isinstance(checked, str):
            return ToolResult(checked, is_error=True)
        for number, earlier in enumerate(self.findings, 1):
            if (earlier.fingerprint, earlier.line) == (checked.fingerprint, checked.line):
                return ToolResult(
                    f"Error: this is finding {number} again (same title and lines); "
                    "it is recorded once.",
                    is_error=True,
                )
        self.findings.append(checked)
        if self.log is not None:
            self.log.finding(checked, self.turn())
        where = f"{checked.path}:{checked.line}"
        return ToolResult(f"Finding {len(self.findings)} recorded ({checked.severity}, {where}).")


class FindingsTools:
    """A `ToolExecutor` that serves `report_finding` and hands every other call to `inner`."""

    def __init__(self, inner: Hub, sink: FindingSink) -> None:
        self._inner = inner
        self.sink = sink
        self._spec = report_finding_spec()

    @property
    def tools(self) -> list[ToolSpec]:
        """Every tool, `report_finding` included."""
        return [*self._inner.tools, self._spec]

    @property
    def allowed_tools(self) -> list[ToolSpec]:
        """The tools offered to the model."""
        return [*self._inner.allowed_tools, self._spec]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name != REPORT_FINDING:
            return await self._inner.call(name, arguments)
        return self.sink.accept(arguments)


def with_config_findings(tasks: list[Task], on: bool) -> list[Task]:
    """The tasks, each asking for findings when the config file says `findings: true`."""
    if not on:
        return tasks
    spec = FindingsSpec()
    return [
        task
        if task.spec.findings is not None
        else dataclasses.replace(task, spec=task.spec.model_copy(update={"findings": spec}))
        for task in tasks
    ]


def fail_on_of(task: Task, override: str | None) -> str:
    """The task's gate: `--fail-on`, else its `findings.fail_on`, else `never`."""
    own = task.spec.findings.fail_on if task.spec.findings else None
    return override or own or "never"


def findings_gate(findings: Sequence[Finding], fail_on: str) -> str | None:
    """Why the findings fail the task under `fail_on`, or None when they do not."""
    if fail_on not in SEVERITIES:
        return None
    worst = SEVERITIES.index(fail_on)
    hits = [f for f in findings if SEVERITIES.index(f.severity) <= worst]
    if not hits:
        return None
    hits.sort(key=lambda f: SEVERITIES.index(f.severity))
    listed = "; ".join(f"{f.severity} {f.path}:{f.line}: {f.title}" for f in hits[:_GATE_LISTED])
    more = f"; and {len(hits) - _GATE_LISTED} more" if len(hits) > _GATE_LISTED else ""
    return f"{len(hits)} finding(s) at or above {fail_on}: {listed}{more}"
