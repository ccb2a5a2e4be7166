"""Resuming a repeated task (DESIGN 22): only its samples that did not pass run again, and the
report covers all K, the samples that passed before included from their logs.

A resumed sample keeps its index and K from its log's header (untrusted: checked to be whole
numbers with 1 <= i <= K <= the most samples a task may have), so its new session, patch and
report line are the same sample's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.errors import ConfigError, ExitCode
from runner.outcome import TaskOutcome, Totals
from runner.report import MAX_REPEAT
from runner.run.plan import Job
from runner.sessionlog import SessionRecord, latest_sessions, status_of
from runner.task import Task

__all__ = ["passed_samples", "with_logged_sample"]


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


def passed_samples(paths: Sequence[str], jobs: Sequence[Job]) -> list[TaskOutcome]:
    """The samples that passed, from their latest logs in the folders of `paths`, of every
    repeated task that `jobs` resume a sample of: the rest of each such task's K."""
    resumed = {(j.task.name, j.task.of): j.task for j in jobs if j.task.of}
    running = {(j.task.name, j.task.sample) for j in jobs if j.task.of}
    carried: dict[tuple[str, int], TaskOutcome] = {}
    for text in paths:
        if not Path(text).is_dir():
            continue
        for record in latest_sessions(Path(text)):
            task = record.header.get("task")
            name = str(task.get("name")) if isinstance(task, dict) else ""
            of, sample = record.header.get("of"), record.header.get("sample")
            if not isinstance(of, int) or not isinstance(sample, int):
                continue
            if (name, of) not in resumed or (name, sample) in running:
                continue
            if status_of(record) == "passed":
                own = with_logged_sample(resumed[(name, of)], record.header, record.path)
                carried[(name, sample)] = _outcome(record, own)
    return [carried[k] for k in sorted(carried)]


def _outcome(record: SessionRecord, task: Task) -> TaskOutcome:
    """A sample that passed before, as its log's end line records it."""
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
    return TaskOutcome(
        name=task.name,
        task_file=task.file,
        status="passed",
        reason=str(end.get("reason") or ""),
        result=str(end.get("result") or ""),
        exit_code=ExitCode.OK,
        model=str(record.header.get("model") or ""),
        totals=spent,
        session_log=record.path,
        session_id=record.session_id,
        sample=task.sample,
        of=task.of,
    )
