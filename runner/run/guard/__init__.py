"""What stands between the agent and the machine (DESIGN sections 7b, 14 and 15).

Around each tool call, the gates of the executor (`executor.GuardedExecutor`): the permission
rules (`permissions`), the pre_tool and post_tool hooks (`hooks`, which also runs the start,
stop and end hooks), and the skills the runner serves itself. `features` puts a task's hooks,
skills and rules together and checks them before anything starts. Under every command the task
runs, its OS sandbox (`sandboxing`: the settings, the backend the run found, the record), and
its network allowlist's proxy (`network`, DESIGN 19). `findings` serves the runner's
`report_finding` tool around all of these (each call checked by `findcheck`) and gates a task on
its findings (DESIGN 21).
"""

from __future__ import annotations

from runner.run.guard.features import (
    end_hooks,
    feature_problems,
    guarded,
    start_hooks,
    task_skills,
    tools_with_skills,
    with_config_hooks,
)
from runner.run.guard.findings import (
    REPORT_FINDING,
    FindingSink,
    findings_gate,
    report_finding_spec,
    with_config_findings,
)
from runner.run.guard.hooks import HookRunner, stop_feedback
from runner.run.guard.network import check_network, log_network
from runner.run.guard.sandboxing import TaskSandbox, command_env, sandbox_settings, task_sandbox

__all__ = [
    "REPORT_FINDING",
    "FindingSink",
    "HookRunner",
    "TaskSandbox",
    "check_network",
    "command_env",
    "end_hooks",
    "feature_problems",
    "findings_gate",
    "guarded",
    "log_network",
    "report_finding_spec",
    "sandbox_settings",
    "start_hooks",
    "stop_feedback",
    "task_sandbox",
    "task_skills",
    "tools_with_skills",
    "with_config_findings",
    "with_config_hooks",
]
