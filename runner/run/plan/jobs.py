"""What a run is made of before it starts: its options, and one job per task with its model.

`prepare_jobs` checks what must hold before anything runs (a model for every task, prompt
sections that build: exit 2 otherwise), makes each task's model (one shared client per model
where the provider allows it) and resolves the tool mode each task runs in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import ConfigError, ExitCode
from runner.llm import LLM, split_spec
from runner.outcome import Status, TaskOutcome
from runner.run.plan.loading import check_sections
from runner.run.plan.overrides import TaskOverrides
from runner.run.session import ResumePoint
from runner.run.turn import with_tool_mode
from runner.settings import Settings
from runner.task import Task

__all__ = ["Job", "RunOptions", "prepare_jobs", "self_grading_problem"]


@dataclass(frozen=True)
class RunOptions:
    """Command-line choices shared by `run` and `resume`."""

    out: Path
    junit: Path | None
    output: str = "text"
    quiet: bool = False
    verbose: bool = False
    """Print each task's transcript when it ends (on GitHub Actions it is always printed, folded
    in a group)."""
    fail_fast: bool = False
    isolation: str | None = None
    """`--isolation`: none or worktree for every task (None: each task's own)."""
    keep_worktrees: bool = False
    overrides: TaskOverrides = field(default_factory=TaskOverrides)
    """The command line's task limits and policy, over every task's (DESIGN 20)."""
    events: str | None = None
    """`--events`: a file, or `-` for stdout, to stream every session-log record to."""
    result_file: Path | None = None
    """`--result-file`: where the final result text (or a JSON map of them) is written."""
    repeat: int | None = None
    """`--repeat K`: every task runs as K samples (None: each task's own `repeat`)."""
    min_pass_rate: float = 1.0
    """`--min-pass-rate R`: a repeated task passes when this share of its samples pass."""
    print_result: bool = False
    """`run -p`: the console goes to stderr and the result text to stdout, as `claude -p` does
    (unless `--output json` or `--events -` take stdout, or `--result-file` says where the
    result goes)."""

    @property
    def result_on_stdout(self) -> bool:
        """Whether stdout holds the result text (`run -p`, or `--result-file -`)."""
        if self.result_file is not None:
            return str(self.result_file) == "-"
        return self.print_result and self.output == "text" and self.events != "-"

    @property
    def console_on_stderr(self) -> bool:
        """Whether the console goes to stderr: stdout holds a JSON document, the event stream
        or the result text, or the run is a `run -p`."""
        taken = self.output == "json" or self.events == "-" or self.result_on_stdout
        return taken or self.print_result

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_pass_rate <= 1.0:
            raise ConfigError(
                f"--min-pass-rate {self.min_pass_rate:g}: give a share from 0 to 1, e.g. 0.8"
            )


@dataclass
class Job:
    """One task to run, with its model and, on resume, where it picks up."""

    task: Task
    llm: LLM
    resume: ResumePoint | None = None
    started: bool = field(default=False)

    def as_sample(self, outcome: TaskOutcome) -> TaskOutcome:
        """`outcome` with the task's sample index and K (DESIGN 22); as it is for a task run
        once."""
        if not self.task.of:
            return outcome
        return dataclasses.replace(outcome, sample=self.task.sample, of=self.task.of)

    def lost(self, error: BaseException | None) -> TaskOutcome:
        """A task that ended without an outcome (a bug): reported as an internal error."""
        return self._unfinished(
            "error",
            f"internal error: the task ended without an outcome ({error!r})",
            "internal",
            ExitCode.INTERNAL,
        )

    def not_started(self, exit_code: ExitCode, reason: str | None = None) -> TaskOutcome:
        """A task an interruption kept from starting (or from finishing, with `reason`)."""
        why = reason or "not started: the run was interrupted"
        return self._unfinished("interrupted", why, "signal", exit_code)

    def skipped(self, stopped_by: TaskOutcome) -> TaskOutcome:
        """A task `--fail-fast` kept from starting: listed, so that no report loses it."""
        status = stopped_by.status.replace("_", " ")
        why = f"not started: --fail-fast stopped the run after {stopped_by.label} {status}"
        return self._unfinished("skipped", why, "fail_fast", ExitCode.OK)

    def _unfinished(
        self, status: Status, reason: str, kind: str, exit_code: ExitCode
    ) -> TaskOutcome:
        return TaskOutcome(
            sample=self.task.sample,
            of=self.task.of,
            name=self.task.name,
            task_file=self.task.file,
            status=status,
            reason=reason,
            kind=kind,
            exit_code=exit_code,
            model=f"{self.llm.provider}:{self.llm.model}",
        )


def prepare_jobs(tasks: list[Task], settings: Settings, model: str | None) -> list[Job]:
    """Check what must hold before anything runs (exit 2 otherwise) and make each task's model."""
    from runner.llm import create_llm

    jobs = []
    shared: dict[str, LLM] = {}
    for task in tasks:
        spec = model or task.spec.model or settings.model
        if not spec:
            raise ConfigError(
                f"{task.file}:{task.line}: task {task.name!r} has no model: pass --model "
                "PROVIDER:MODEL, set `model:` in the task, or AGENT_RUNNER_MODEL"
            )
        check_sections(task, settings)
        if problem := self_grading_problem(task, spec, settings):
            raise ConfigError(f"{task.file}:{task.line}: {problem}")
        llm = shared.get(spec) or create_llm(spec, settings)
        if getattr(llm, "shareable", False):
            # One client (TLS context, connection pool) for every task on this model, instead of
            # one per task built at the same moment: 32 of those cost a second of CPU.
            shared[spec] = llm
        # The task in the mode it runs in: `auto` and --tool-mode resolved (DESIGN 16).
        jobs.append(Job(with_tool_mode(task, llm, settings), llm))
    return jobs


def self_grading_problem(task: Task, model: str, settings: Settings) -> str | None:
    """Why the task's rubric may not be graded by `grader` (its own model, DESIGN 27), or None."""
    rubric = task.spec.success.rubric
    if rubric is None or rubric.allow_self_grading:
        return None
    if _provider_model(rubric.grader, settings) != _provider_model(model, settings):
        return None
    return (
        f"task {task.name!r}: success.rubric.grader {rubric.grader} is the task's own model "
        f"({model}), which would grade its own work: name another model as the grader, or set "
        "`success.rubric.allow_self_grading: true`"
    )


def _provider_model(spec: str, settings: Settings) -> tuple[str, str]:
    try:
        return split_spec(spec, settings)
    except ConfigError:  # a bare name whose provider cannot be told: compared as written
        return "", spec.strip()
