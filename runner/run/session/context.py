"""What a run shares with its tasks (`RunContext`) and what one task carries while it runs
(`TaskState`): the session's parts read and fill them, the outcome is made from them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import ExitCode
from runner.fleet import Governor
from runner.llm import LLM
from runner.prompt import RequestMeter, ToolShelf
from runner.redact import Redactor
from runner.run.guard import FindingSink, HookRunner, TaskSandbox
from runner.run.session.requirements import GitState
from runner.run.session.rubric import Grading
from runner.run.telemetry import Progress
from runner.run.turn import Budget, Completion, RunBudget
from runner.sessionlog import EventStream, SessionLogWriter
from runner.settings import Settings

__all__ = ["RunContext", "TaskState"]


@dataclass
class RunContext:
    """What every task of one run shares."""

    settings: Settings
    run_id: str
    out_dir: Path
    redactor: Redactor
    env: dict[str, str]
    run_budget: RunBudget = field(default_factory=RunBudget)
    say: Callable[[str], None] = print
    """Console output for diagnostics (already redacted by the caller's wrapper)."""
    signal_exit: ExitCode = ExitCode.SIGINT
    """Exit code of an interrupted task: set by the signal handler before it cancels tasks."""
    interrupted: bool = False
    """A signal arrived: no new task starts."""
    models: dict[str, LLM] = field(default_factory=dict)
    """Sub-agents' models other than their task's, by `PROVIDER:MODEL`, made on first use."""
    progress: Progress = field(default_factory=Progress)
    """Live progress lines on the console (runner.run.telemetry.progress); off by default."""
    events: EventStream | None = None
    """`--events`: where every session log's records are streamed too (sub-agents' as well)."""
    governor: Governor | None = None
    """The fleet's governor (DESIGN 25), also on `run_budget`; None: limits per process."""
    fleet: dict[str, Any] | None = None
    """The governor's figures at the end of the run, for summary.json."""


@dataclass
class TaskState:
    """What one task carries while it runs, for the session's parts and its outcome."""

    log: SessionLogWriter | None = None
    budget: Budget = field(default_factory=Budget)
    completion: Completion | None = None
    started: float = field(default_factory=time.monotonic)
    early_warnings: list[str] = field(default_factory=list)
    """Hub warnings from before the log existed (servers start first); written once it opens."""
    check_output: str = ""
    """The end of the last failed success check's output, for the reports."""
    git_before: GitState | None = None
    """The workdir's git state at the start, for `success.require.changed_files`."""
    hooks: HookRunner | None = None
    executor: Any = None
    """The loop's tool executor when the task has hooks, skills or permissions (else the hub)."""
    children: list[str] = field(default_factory=list)
    """Session ids of the sub-agents the task started (runner.run.agents)."""
    sandbox: TaskSandbox | None = None
    """What confines the task's commands (runner.run.guard.sandboxing)."""
    findings: FindingSink = field(default_factory=lambda: FindingSink(None))
    auth: Callable[[], list[Any]] = list  # the hub's AuthRecords, restarts included (DESIGN 26)
    grading: Grading | None = None
    """`success.rubric`: its grader's spending and last grade (runner.run.session.rubric)."""
    shelf: ToolShelf = field(default_factory=ToolShelf)
    """The deferred tools and those loaded so far (DESIGN 28)."""
    meter: RequestMeter | None = None
    """Measures each request by part (DESIGN 28)."""
