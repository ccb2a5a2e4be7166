"""One task, start to end (DESIGN sections 7, 12, 13 and 15), and a sub-agent's session.

`session` runs a task: its servers, its system prompt and tools (`tools`), the log it opens with
(`header`), the loop, the judgement of a completion (`judge`: `requirements`, the stop hooks,
`checks`, and last a grader model's `rubric`), the outcome. `child` is one sub-agent's session,
built from the same parts and handed to the sub-agents' executor as its `ChildRunner`.
`isolation` runs a task in a git worktree of its own, its change a patch; the git machinery under
it (the worktree, the checkout record, the runner's safe git) is `runner.workspace.git`.
"""

from __future__ import annotations

from runner.run.session.child import run_child
from runner.run.session.header import CONFIG_PART, EXECUTABLE_PARTS, task_hashes
from runner.run.session.isolation import (
    check_isolation,
    parent_worktree,
    run_in_isolation,
    write_reason,
)
from runner.run.session.session import ResumePoint, RunContext, run_task
from runner.run.session.tools import (
    offered_with_search,
    task_prompt_sections,
    task_shelf,
    task_system_prompt,
    task_tool_lists,
)
from runner.workspace import Located, locate_in_checkout, repository_of

__all__ = [
    "CONFIG_PART",
    "EXECUTABLE_PARTS",
    "task_hashes",
    "Located",
    "ResumePoint",
    "RunContext",
    "check_isolation",
    "locate_in_checkout",
    "offered_with_search",
    "parent_worktree",
    "repository_of",
    "run_child",
    "run_in_isolation",
    "run_task",
    "task_prompt_sections",
    "task_shelf",
    "task_system_prompt",
    "task_tool_lists",
    "write_reason",
]
