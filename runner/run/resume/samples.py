"""Resuming a repeated task (DESIGN 22): only its samples that did not pass run again, and the
report covers all K, the samples that do not run again included as their logs ended.

A resumed sample keeps its index and K from its log's header (untrusted: checked to be whole
numbers with 1 <= i <= K <= the most samples a task may have), so its new session, patch and
report line are the same sample's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from runner.errors import ConfigError, ExitCode
from runner.outcome import Status, TaskOutcome, Totals
from runner.report import MAX_REPEAT
from runner.run.plan import Job
from runner.sessionlog import SessionRecord, latest_sessions, status_of
from runner.task import Task

__all__ = ["other_samples", "with_logged_sample"]

_CODES = {
    "passed": ExitCode.OK,
    "failed": ExitCode.FAILED,
    "budget_exceeded": ExitCode.BUDGET,
    "error": ExitCode.INFRASTRUCTURE,
    "interrupted": ExitCode.FAILED,
}
"""A carried sample's own exit code by its logged status."""


def with_logged_sample(task: Task, header: Mapping[str, Any], log: Path) -> Task:
    """The task as the sample its log's header names (`sample`, `of`); as it is for a log of a
    task run once. A header with a sample that is not one refuses the resume (exit 2)."""
    sample, of = header.get("sample"), header.get("of")
    if sample is None and of is None:
        return task
    if (
        not isinstance(sample, int)
        or not isinstance(of, int)
        or isinstance(sample, bool)
        or isinstance(of, bool)
        or not 1 <= sample <= of <= MAX_REPEAT
    ):
        raise ConfigError(
            f"{log}:1: the header's sample {sample!r} of {of!r} is not a sample i of K with "
            f"1 <= i <= K <= {MAX_REPEAT}; the log was edited or damaged"
        )
    return dataclasses.replace(task, sample=sample, of=of)


def other_samples(paths: Sequence[str], jobs: Sequence[Job]) -> list[TaskOutcome]:
    """The samples that do not run again, from their latest logs in the folders of `paths` (a
    log's own folder for a log), of every repeated task that `jobs` resume a sample of: the rest
    of each such task's K, as their logs ended (resuming a folder, those all passed)."""
    resumed = {(j.task.name, j.task.of): j.task for j in jobs if j.task.of}
    running = {(j.task.name, j.task.sample) for j in jobs if j.task.of}
    carried: dict[tuple[str, int], TaskOutcome] = {}
    # A log given alone is read with the logs beside it: its task's other samples are there.
    folders = dict.fromkeys(p if p.is_dir() else p.parent for p in map(Path, paths))
    for folder in folders:
        for record in latest_sessions(folder):
            task = record.header.get("task")
            name = str(task.get("name")) if isinstance(task, dict) else ""
            of, sample = record.header.get("of"), record.header.get("sample")
            if not isinstance(of, int) or not isinstance(sample, int):
                continue
            if (name, of) not in resumed or (name, sample) in running:
                continue
            own = with_logged_sample(resumed[(name, of)], record.header, record.path)
            carried[(name, sample)] = _outcome(record, own)
    return [carried[k] for k in sorted(carried)]


def _outcome(record: SessionRecord, task: Task) -> TaskOutcome:
    """A sample that is not run again, as its log's end line records it."""
    end = record.end or {}
    logged = end.get("totals")
    totals = logged if isinstance(logged, dict) else {}

    def number(key: str) -> float:
        value = totals.get(key)
        return float(value) if isinstance(value, int | float) and value >= 0 else 0.0

    spent = Totals(
        turns=int(number("turns")),
        input_tokens=int(number("input_tokens")),
        output_tokens=int(number("output_tokens")),
        cache_read_tokens=int(number("cache_read_tokens")),
        cache_write_tokens=int(number("cache_write_tokens")),
        cost_usd=number("cost_usd"),
        tool_calls=int(number("tool_calls")),
        duration_s=number("duration_s"),
    )
    status = status_of(record)
    kind = str(end.get("kind") or "")
    ended: Status = cast(Status, status) if status in _CODES else "interrupted"
    # An earlier interruption is not this run's: it counts as a sample that did not pass (1).
    code = ExitCode.INTERNAL if kind == "internal" else _CODES.get(status, ExitCode.FAILED)
    return TaskOutcome(
        name=task.name,
        task_file=task.file,
        status=ended,
        reason=str(end.get("reason") or "cut off before it finished (no end line)"),
        result=str(end.get("result") or ""),
        kind=kind,
        exit_code=code,
        model=str(record.header.get("model") or ""),
        totals=spent,
        session_log=record.path,
        session_id=record.session_id,
        sample=task.sample,
        of=task.of,
    )
