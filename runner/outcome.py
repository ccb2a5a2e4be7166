"""What a finished task and a finished run look like: the records the reports are built from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runner.errors import ExitCode

__all__ = [
    "CriterionGrade",
    "Finding",
    "Grade",
    "RunSummary",
    "SEVERITIES",
    "SandboxRecord",
    "Severity",
    "Status",
    "TaskOutcome",
    "Totals",
    "finding_counts",
    "meets_rate",
    "passes_rate",
    "sample_groups",
]

Status = Literal["passed", "failed", "budget_exceeded", "error", "interrupted", "skipped"]
"""How a task ended; the same words as the session log's `end` event. `skipped`: never started
(`--fail-fast` stopped the run first), so it has no session log."""

Severity = Literal["error", "warning", "note"]
"""How serious a finding is: SARIF's `level` words (DESIGN 21)."""
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "note")
"""The severities, most serious first."""


@dataclass(frozen=True)
class Finding:
    """One accepted `report_finding` call (DESIGN 21): checked, bounded and masked already."""

    path: str
    """The file, relative to the repository root (POSIX separators); to the workdir outside git."""
    line: int
    """First line (1-based)."""
    end_line: int
    """Last line (equal to `line` for one line)."""
    severity: Severity
    title: str
    """One line; the rule the finding belongs to."""
    message: str
    suggestion: str | None = None
    """Replacement text for lines `line`..`end_line`, when the agent proposed one."""
    fingerprint: str = ""
    """Stable across runs: a hash of the rule, the path and the text of the lines."""

    def as_json(self) -> dict[str, Any]:
        """The finding as plain data (session log `finding` event, summary.json)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CriterionGrade:
    """One criterion of a rubric over its votes (DESIGN 27)."""

    criterion: str
    passed: bool
    """Most of its votes passed it."""
    votes: tuple[bool, ...]
    """Each vote's pass or fail, in order."""
    reasons: tuple[str, ...]
    """Each vote's reason, in order (masked)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "passed": self.passed,
            "votes": list(self.votes),
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class Grade:
    """A rubric's last grading of a task's result (DESIGN 27): the session log's `grade` event,
    summary.json, JUnit, the step summary."""

    grader: str
    """`PROVIDER:MODEL` of the grader."""
    passed: bool
    criteria: tuple[CriterionGrade, ...]
    votes: int
    """Votes per criterion."""
    pass_rule: str | float
    """`all`, or the share of the criteria that must pass."""
    attempt: int
    """Which completion of the task this grades, from 1."""
    cost_usd: float = 0.0
    """What this grading cost (in the task's cost too)."""
    total_cost_usd: float = 0.0
    """What the grader cost over all the task's gradings so far."""
    invalid_votes: int = 0
    """Votes of this grading whose verdict stayed malformed (counted as failed)."""

    @property
    def failed(self) -> tuple[CriterionGrade, ...]:
        """The criteria that did not pass."""
        return tuple(c for c in self.criteria if not c.passed)

    def as_json(self) -> dict[str, Any]:
        return {
            "grader": self.grader,
            "passed": self.passed,
            "votes": self.votes,
            "pass": self.pass_rule,
            "attempt": self.attempt,
            "cost_usd": self.cost_usd,
            "total_cost_usd": self.total_cost_usd,
            "invalid_votes": self.invalid_votes,
            "criteria": [criterion.as_json() for criterion in self.criteria],
        }


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
    of them when `degraded`. `net-allowlist`: a host list the backend cannot enforce (Landlock
    limits TCP connect by port, not address; no backend at all)."""
    allowlist: tuple[str, ...] = ()
    """The hosts of `sandbox.network` when it is a list (DESIGN 19); () when on or off."""
    allowlist_enforced: bool = False
    """The allowlist proxy is the only way out; False: only programs that honour the proxy
    variables are filtered (no backend, or Landlock without network rules)."""
    connections: tuple[int, int] | None = None
    """Connections the proxy allowed and refused; set when the task has ended."""
    git: str = ""
    """The repository's git folder (DESIGN 24): `read-only` (bubblewrap bound it, and a trial
    write failed), `checked` (recorded at the start, compared and restored at the end),
    `writable` (`sandbox.git: writable`: commands may commit, config, hooks and info are still
    checked); "" when commands cannot reach one."""
    out: str = ""
    """The run's `--out` inside the workdir (DESIGN 24): `read-only` or `checked`; "" when it
    lies outside the commands' reach."""

    def line(self) -> str:
        """`sandbox: enforced (bwrap); network: off; writable: workdir; confined: fs, ...`."""
        head = {
            "enforced": f"enforced ({self.backend})",
            "degraded": f"degraded ({self.reason})",
            "unavailable": f"unavailable ({self.reason})",
            "off": "off",
        }[self.status]
        if self.status != "enforced":
            return f"sandbox: {head}{self._allowlist_line()}{self._left_line()}"
        writable = ", ".join(("workdir", *self.writable))
        network = "on" if self.network else "off"
        if self.allowlist:
            line = f"sandbox: {head}{self._allowlist_line()}; writable: {writable}"
        else:
            line = f"sandbox: {head}; network: {network}; writable: {writable}"
        if self.enforced:
            line += f"; confined: {', '.join(self.enforced)}"
        if self.missing:
            line += f"; not confined: {', '.join(self.missing)} ({self.reason})"
        return line + self._left_line()

    def _left_line(self) -> str:
        """`; git: read-only; out: read-only` (DESIGN 24)."""
        return (f"; git: {self.git}" if self.git else "") + (
            f"; out: {self.out}" if self.out else ""
        )

    def _allowlist_line(self) -> str:
        """`; network: allowlist (not enforced); connections: 3 allowed, 1 refused`."""
        if not self.allowlist:
            return ""
        hosts = ", ".join(self.allowlist[:10]) + (", ..." if len(self.allowlist) > 10 else "")
        if self.allowlist_enforced:
            text = f"; network: allowlist ({hosts})"
        else:
            text = f"; network: allowlist (not enforced); hosts: {hosts}"
        if self.connections is not None:
            text += f"; connections: {self.connections[0]} allowed, {self.connections[1]} refused"
        return text

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
            **self._allowlist_json(),
            **({"git": self.git} if self.git else {}),
            **({"out": self.out} if self.out else {}),
        }

    def _allowlist_json(self) -> dict[str, Any]:
        if not self.allowlist:
            return {}
        data: dict[str, Any] = {"allowlist": list(self.allowlist)}
        data["allowlist_enforced"] = self.allowlist_enforced
        if self.connections is not None:
            allowed, refused = self.connections
            data["connections"] = {"allowed": allowed, "refused": refused}
        return data


def finding_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings by severity, every severity present."""
    counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        counts[finding.severity] += 1
    return counts


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
    system_tokens: int = 0
    """Estimated tokens of the system prompts the requests carried, without tool definitions
    (DESIGN 28): each request counts, so a 10-turn task counts its system prompt 10 times."""
    tools_tokens: int = 0
    """Estimated tokens of the tool definitions the requests carried."""
    messages_tokens: int = 0
    """Estimated tokens of the messages the requests carried."""

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
            system_tokens=self.system_tokens + other.system_tokens,
            tools_tokens=self.tools_tokens + other.tools_tokens,
            messages_tokens=self.messages_tokens + other.messages_tokens,
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
    budget_exceeded, `check`/`expect`/`rubric`/`requirement`/`agent`/`no_tool_call` for failed,
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
    findings: tuple[Finding, ...] | None = None
    """`findings:` tasks: what the agent (and its sub-agents) reported; None: not asked for."""
    sample: int = 0
    """A sample of a repeated task (DESIGN 22): which one, from 1; 0 for a task run once."""
    of: int = 0
    """A sample of a repeated task: how many samples the task has; 0 for a task run once."""
    grade: Grade | None = None
    """A task with `success.rubric`: its last grading; None when it was never graded."""
    mcp_auth: tuple[dict[str, Any], ...] = ()
    """Which auth each MCP server with `auth:` used (DESIGN 26): type, issuer, scopes granted,
    expiry, renewals; never a token."""

    @property
    def label(self) -> str:
        """The name as reports show it: `name [i/K]` for a sample of a repeated task."""
        return f"{self.name} [{self.sample}/{self.of}]" if self.of else self.name


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
    min_pass_rate: float = 1.0
    """`--min-pass-rate`: the share of a repeated task's samples that must pass (DESIGN 22)."""
    fleet: dict[str, Any] | None = None
    """The fleet governor's figures and this shard's (DESIGN 25); None without a governor."""

    @property
    def tasks(self) -> int:
        """Tasks run: a repeated task counts once, however many samples it has."""
        return sum(1 for o in self.outcomes if not o.of) + len(sample_groups(self.outcomes))

    @property
    def totals(self) -> Totals:
        total = Totals()
        for outcome in self.outcomes:
            total = total + outcome.totals
        return total

    @property
    def passed(self) -> int:
        """Tasks that passed: a repeated task by its pass rate (`runner.report.repeats`)."""
        single = sum(1 for o in self.outcomes if not o.of and o.status == "passed")
        groups = sample_groups(self.outcomes).values()
        return single + sum(1 for g in groups if meets_rate(g, self.min_pass_rate))

    @property
    def skipped(self) -> int:
        """Tasks that never started (`--fail-fast`): a repeated task when none of its samples
        did."""
        single = sum(1 for o in self.outcomes if not o.of and o.status == "skipped")
        groups = sample_groups(self.outcomes).values()
        return single + sum(1 for g in groups if all(o.status == "skipped" for o in g))

    @property
    def failed(self) -> int:
        """Tasks that ran and did not pass."""
        return self.tasks - self.passed - self.skipped


def sample_groups(outcomes: list[TaskOutcome]) -> dict[tuple[str, str], list[TaskOutcome]]:
    """The samples of each repeated task by (name, task file), one outcome per sample index
    (a later outcome of the same index, as a resumed sample's, wins), in sample order."""
    groups: dict[tuple[str, str], dict[int, TaskOutcome]] = {}
    for outcome in outcomes:
        if outcome.of:
            groups.setdefault((outcome.name, str(outcome.task_file)), {})[outcome.sample] = outcome
    return {key: [found[i] for i in sorted(found)] for key, found in groups.items()}


def meets_rate(samples: list[TaskOutcome], min_pass_rate: float) -> bool:
    """Whether the samples that passed reach `min_pass_rate` of the task's K (`of`); a sample
    that never ran counts as not passed."""
    of = max((o.of for o in samples), default=0)
    passes = sum(1 for o in samples if o.status == "passed")
    return passes_rate(passes, of, min_pass_rate)


def passes_rate(passes: int, samples: int, min_pass_rate: float) -> bool:
    """Whether `passes` out of `samples` reach the rate, compared in whole numbers so that 3/5
    meets 0.6 whatever the float rounding."""
    return passes * 1_000_000 >= round(min_pass_rate * 1_000_000) * samples
