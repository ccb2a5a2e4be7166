"""`list`: what `run` would run with the same paths, `--filter` and `--shard` (DESIGN 20).

One row per task (per sample of a repeated task, `name [i/K]`, as `run` shards them): name,
file:line, workdir, model, tool mode, isolation, sandbox mode; under the table, when a task
repeats, the samples and the most they may cost (DESIGN 22). Nothing starts: no server, no model
client. Names and paths come from files a repository holds, so the
text form escapes what the terminal would act on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from runner.errors import ExitCode
from runner.run.guard import sandbox_settings
from runner.run.plan.loading import load_selected_tasks
from runner.run.plan.samples import expand_samples, shard_samples, worst_case_line
from runner.run.plan.selection import select_tasks
from runner.settings import Settings, environ
from runner.task import Task

__all__ = ["list_tasks", "task_rows"]

_COLUMNS = ("name", "where", "workdir", "model", "tool_mode", "isolation", "sandbox")


def list_tasks(
    paths: Sequence[str],
    params: Mapping[str, str],
    selection: tuple[Sequence[str] | None, str | None],
    model: str | None,
    settings: Settings,
    *,
    isolation: str | None = None,
    json_output: bool = False,
    repeat: int | None = None,
) -> int:
    """Print the selected tasks as a table (or a JSON list); exit 0. `model`, `isolation`,
    `repeat` and the settings' tool mode and sandbox mode are the flags `run` would get."""
    selected = select_tasks(load_selected_tasks(paths, params, settings), selection[0], None)
    samples = expand_samples(selected, repeat, isolation, environ())
    tasks = shard_samples(samples, selection[1])
    rows = task_rows(tasks, model, settings, isolation)
    if json_output:
        print(json.dumps(rows, indent=2), flush=True)
        return ExitCode.OK
    print(_table(rows), flush=True)
    if any(task.of for task in tasks):
        print(worst_case_line(tasks, 1), flush=True)  # each row is one sample
    return ExitCode.OK


def task_rows(
    tasks: Sequence[Task], model: str | None, settings: Settings, isolation: str | None = None
) -> list[dict[str, Any]]:
    """A row per task: what `run` would run it with (`model` null when none is set anywhere)."""
    return [
        {
            "name": task.label,
            **({"sample": task.sample, "of": task.of} if task.of else {}),
            "file": str(task.file),
            "line": task.line,
            "workdir": str(task.workdir),
            "model": model or task.spec.model or settings.model or None,
            "tool_mode": settings.tool_mode or task.spec.tool_mode,
            "isolation": isolation or task.spec.isolation,
            "sandbox": sandbox_settings(task, settings).mode,
        }
        for task in tasks
    ]


def _table(rows: list[dict[str, Any]]) -> str:
    cells = [list(_COLUMNS)]
    for row in rows:
        shown = {**row, "where": f"{row['file']}:{row['line']}", "model": row["model"] or "-"}
        cells.append([_printable(str(shown[key])) for key in _COLUMNS])
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    lines.append(f"{len(rows)} task(s)")
    return "\n".join(line.rstrip() for line in lines)


def _printable(text: str) -> str:
    """Control characters (an escape sequence in a file name) as their escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
