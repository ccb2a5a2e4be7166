"""Repeats (DESIGN 22): a task with `repeat: K` (or under `--repeat K`) runs as K samples.

Each sample is the task with its index (`Task.sample`, from 1) and K (`Task.of`): its own job,
session and log. A sample of a task that may write runs in a git worktree of its own when its
workdir is in a git repository, so that K samples under `--jobs` never edit the same files;
otherwise the shared-workdir rule (`runner.run.session.check_isolation`) applies to the samples
as to any tasks. `--shard K/N` splits the (task, sample) pairs, so the samples of one task spread
over a matrix and `report merge` joins them into one verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from runner.errors import ConfigError
from runner.report import MAX_REPEAT
from runner.run.plan.selection import parse_shard, shard_of
from runner.run.session import repository_of, write_reason
from runner.task import Task

__all__ = ["expand_samples", "shard_samples", "worst_case_cost", "worst_case_line"]


def expand_samples(
    tasks: Sequence[Task],
    repeat: int | None,
    isolation: str | None,
    env: Mapping[str, str],
) -> list[Task]:
    """Each task, or its K samples when `repeat` (the flag) or the task's `repeat:` is over 1."""
    if repeat is not None and not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError(f"--repeat {repeat}: give a number of samples from 1 to {MAX_REPEAT}")
    expanded: list[Task] = []
    for task in tasks:
        times = repeat if repeat is not None else task.spec.repeat
        if times <= 1:
            expanded.append(task)
            continue
        own = _isolated(task, isolation, env)
        expanded.extend(dataclasses.replace(own, sample=i, of=times) for i in range(1, times + 1))
    return expanded


def _isolated(task: Task, isolation: str | None, env: Mapping[str, str]) -> Task:
    """The task in a worktree of its own per sample when it may write and its workdir is in a
    git repository with a commit; as it is otherwise (or under an explicit `--isolation`)."""
    if isolation is not None or task.spec.isolation == "worktree" or write_reason(task) is None:
        return task
    try:
        repository_of(task.workdir, env, None)
    except ConfigError:
        return task  # not a repository: the shared-workdir rule decides
    spec = task.spec.model_copy(update={"isolation": "worktree"})
    return dataclasses.replace(task, spec=spec)


def shard_samples(tasks: list[Task], shard: str | None) -> list[Task]:
    """The tasks and samples of `--shard K/N`: a task run once by a hash of its name (as
    `select_tasks` does), a sample by a hash of `name#i`, so one task's samples spread."""
    if not shard:
        return tasks
    k, n = parse_shard(shard)
    return [t for t in tasks if shard_of(f"{t.name}#{t.sample}" if t.of else t.name, n) == k]


def worst_case_cost(tasks: Sequence[Task], repeat: int | None = None) -> float | None:
    """The most a run of `tasks` could cost in US dollars under `--repeat` (None: each task's
    own `repeat`): every sample spending its `limits.max_cost_usd`. None when some task has no
    cost limit, so that no bound can be given (`list --repeat K` says so)."""
    total = 0.0
    for task in tasks:
        cap = task.spec.limits.max_cost_usd
        if cap is None:
            return None
        total += cap * (repeat if repeat is not None else task.spec.repeat)
    return total


def worst_case_line(tasks: Sequence[Task], repeat: int | None = None) -> str:
    """What `list --repeat K` prints under the tasks: the samples, and the most they may cost
    (every sample spending its cost limit), or which tasks leave the cost unbounded."""
    samples = sum(repeat if repeat is not None else t.spec.repeat for t in tasks)
    cost = worst_case_cost(tasks, repeat)
    if cost is not None:
        return f"{samples} sample(s); worst case ${cost:.2f} (each at its limits.max_cost_usd)"
    free = list(dict.fromkeys(t.name for t in tasks if t.spec.limits.max_cost_usd is None))
    shown = ", ".join(free[:5]) + (f" and {len(free) - 5} more" if len(free) > 5 else "")
    return (
        f"{samples} sample(s); worst case unbounded: {shown} set no limits.max_cost_usd "
        "(set one, or cap the run with --max-cost-usd)"
    )
