"""Running tasks (DESIGN sections 7 and 10): the commands that run, resume and inspect them.

`app` selects tasks (filters, shards), runs them as concurrent jobs under one event loop with
signal handling, and writes the reports. `session` runs one task: its hub, prompt, log, loop and
success checks. `loop` is the agent loop, steered by `budget` (limits) and `compaction`;
`checks` runs the success check and `expect`; `resume` rebuilds a session from its log and runs
on, with its task rebuilt by `resume_task` from the task file that `checkout` finds in the
current checkout. `commands` holds `validate` and `prompt`, which load tasks without running them.
`agents` is the `sub_agent` tool and its executor, `child` one sub-agent's session, `batch` the
calls of one reply that run at once, `agent_resume` settles sub-agents a cut-off run left behind,
`native_turn` the tool mode a task runs in and the loop's side of native tool calls.
`tracing` wraps the run, its tasks, model calls, tool calls and sub-agents in OpenTelemetry spans
when a run is traced (a no-op otherwise); `otel` is the one module that imports the SDK.
"""

from __future__ import annotations

from runner.run.app import RunOptions, run_tasks
from runner.run.commands import annotate_config_error, print_prompt, validate
from runner.run.resume import resume_sessions

__all__ = [
    "RunOptions",
    "annotate_config_error",
    "print_prompt",
    "resume_sessions",
    "run_tasks",
    "validate",
]
