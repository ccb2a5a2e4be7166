"""Running tasks (DESIGN sections 7 and 10): the commands that run, resume and inspect them.

`app` runs and resumes: it selects tasks, runs them as concurrent jobs under one event loop with
signal handling, writes the reports and picks the exit code. Its rooms, from the top down:
`resume` turns logs into jobs; `plan` is everything before a task runs (loading, selection,
shards, jobs, and the `validate` and `prompt` commands); `session` runs one task start to end,
and a sub-agent's session too; `agents` is the `sub_agent` tool and its executor; `guard` (the
executor's gates and the sandbox) and `telemetry` (traces, progress, the signal watchdog) wrap
what the loop does; `turn` is the loop and what one turn needs.
"""

from __future__ import annotations

from runner.run.app import resume_sessions, run_tasks
from runner.run.plan import (
    PromptTask,
    RunOptions,
    TaskOverrides,
    annotate_config_error,
    list_tasks,
    print_prompt,
    report_error,
    validate,
)
from runner.run.resume import latest_run_logs

__all__ = [
    "PromptTask",
    "RunOptions",
    "TaskOverrides",
    "annotate_config_error",
    "latest_run_logs",
    "list_tasks",
    "print_prompt",
    "report_error",
    "resume_sessions",
    "run_tasks",
    "validate",
]
