"""Before anything runs (DESIGN sections 7 and 10): which tasks, checked, with their models.

`loading` finds and loads the task files and checks what needs no server (the config's
extensions, prompt sections, skills and permission rules); `selection` applies `--filter` and
`--shard`; `samples` makes a repeated task's samples (DESIGN 22) and shards them; `jobs` holds
the run's options and makes one job per task, with its model and tool mode. `inspect` is the two
commands that stop there: `validate` and `prompt`; `listing` is a third, `list`. `adhoc` makes the
task of `run -p`; `overrides` are the command line's task limits and policy over the tasks'.
`outdir` checks that the artifacts folder can be written before any task starts.
"""

from __future__ import annotations

from runner.prompt import APPENDED_SECTION
from runner.run.plan.adhoc import (
    PROMPT_TASK_DESCRIPTION,
    PromptTask,
    load_prompt_task,
    prompt_task_path,
    said_with_flags,
)
from runner.run.plan.inspect import annotate_config_error, print_prompt, report_error, validate
from runner.run.plan.jobs import Job, RunOptions, prepare_jobs
from runner.run.plan.listing import list_tasks, task_rows
from runner.run.plan.loading import check_sections, load_selected_tasks
from runner.run.plan.outdir import check_out_dir
from runner.run.plan.overrides import TaskOverrides
from runner.run.plan.samples import (
    expand_samples,
    shard_samples,
    worst_case_cost,
    worst_case_line,
)
from runner.run.plan.selection import parse_shard, select_tasks, shard_of

__all__ = [
    "PROMPT_TASK_DESCRIPTION",
    "prompt_task_path",
    "said_with_flags",
    "APPENDED_SECTION",
    "Job",
    "PromptTask",
    "RunOptions",
    "TaskOverrides",
    "annotate_config_error",
    "check_out_dir",
    "check_sections",
    "expand_samples",
    "list_tasks",
    "load_prompt_task",
    "load_selected_tasks",
    "parse_shard",
    "prepare_jobs",
    "print_prompt",
    "report_error",
    "select_tasks",
    "shard_of",
    "shard_samples",
    "task_rows",
    "validate",
    "worst_case_cost",
    "worst_case_line",
]
