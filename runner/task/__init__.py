"""Task files (DESIGN section 3): YAML read with line positions, checked against typed models,
params filled, `${VAR}` interpolated, extensions merged over the config's, paths made absolute.

`discover_task_files` expands the command line's paths; `load_tasks` turns files into `Task`s or
raises one `TaskFileError` listing every problem as `file:line:column: field: message`.
"""

from __future__ import annotations

from runner.task.agents import (
    AgentLimits,
    AgentSpec,
    agent_tool_problems,
    unmatched_allow_patterns,
)
from runner.task.duration import parse_duration
from runner.task.hooks import Hook, Hooks, ToolHook, parse_config_hooks
from runner.task.loader import Task, load_tasks
from runner.task.model import (
    Expect,
    FindingsSpec,
    Limits,
    Require,
    Rubric,
    Success,
    SuiteSpec,
    TaskSpec,
)
from runner.task.permissions import Permissions, Rule, parse_rule, unmatched_rules
from runner.task.sandbox import writable_problems
from runner.task.yamlsource import discover_task_files

__all__ = [
    "AgentLimits",
    "AgentSpec",
    "Expect",
    "FindingsSpec",
    "Hook",
    "Hooks",
    "Limits",
    "Permissions",
    "Require",
    "Rubric",
    "Rule",
    "Success",
    "SuiteSpec",
    "Task",
    "TaskSpec",
    "ToolHook",
    "agent_tool_problems",
    "discover_task_files",
    "load_tasks",
    "parse_config_hooks",
    "parse_duration",
    "parse_rule",
    "unmatched_rules",
    "unmatched_allow_patterns",
    "writable_problems",
]
