"""A task's hooks, skills and permission rules (DESIGN section 14), put together for a session.

`feature_problems` is what `validate` (and `run`, before anything starts) checks without starting
a server: the skills parse, declared skill folders exist, and each permission rule names a tool
when the task's tools are known without starting anything (only the built-in workspace, plus
`load_skill`). Once a session has listed its servers' tools, `tools_with_skills` checks the rules
again against every tool, and `guarded` wraps the hub in the executor that enforces them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import fnmatch
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runner.errors import Problem, TaskFileError
from runner.mcp import WORKSPACE, builtin_workspace_root, policy_allows
from runner.prompt import Skill, discover_skills, load_skill_spec
from runner.run.guard.executor import GuardedExecutor, Hub
from runner.run.guard.hooks import HookLog, HookRunner
from runner.run.guard.permissions import PermissionGate, answers_to, check_rules_match
from runner.run.guard.sandboxing import command_env
from runner.task import Hooks, Task, parse_config_hooks, unmatched_rules
from runner.toolcall import ToolSpec
from runner.workspace import DESCRIPTIONS

__all__ = [
    "end_hooks",
    "feature_problems",
    "guarded",
    "hook_env",
    "start_hooks",
    "task_skills",
    "tools_with_skills",
    "unmatched_hook_globs",
    "with_config_hooks",
]


def with_config_hooks(tasks: list[Task], config_hooks: dict[str, Any]) -> list[Task]:
    """The tasks with the config file's hooks before their own."""
    hooks = parse_config_hooks(config_hooks) if config_hooks else Hooks()
    if not hooks:
        return tasks
    return [
        dataclasses.replace(
            task, spec=task.spec.model_copy(update={"hooks": task.spec.hooks.after(hooks)})
        )
        for task in tasks
    ]


def _discover(
    task: Task, skipped: list[Problem] | None = None
) -> tuple[list[Skill], list[Problem]]:
    declared = [(task.file.parent / folder).resolve() for folder in task.spec.skills]
    skills, problems = discover_skills(declared, task.workdir, skipped)
    return skills, [_at_declaration(task, declared, problem) for problem in problems]


def _at_declaration(task: Task, declared: list[Path], problem: Problem) -> Problem:
    """A problem of a declared skill folder as a whole (it does not exist) at its line in the
    task file, naming the folder; other problems are where they are (a SKILL.md line)."""
    if problem.line or Path(problem.path) not in declared:
        return problem
    index = declared.index(Path(problem.path))
    line, column = _where(task, "skills", index)
    message = f"{problem.message}: {problem.path}"
    return Problem(str(task.file), line, column, f"skills[{index}]", message, problem.hint)


def _where(task: Task, *key: str | int) -> tuple[int, int]:
    return task.where(key) if task.where is not None else (task.line, 1)


def task_skills(task: Task, warn: Callable[[str], None] | None = None) -> list[Skill]:
    """The task's skills; TaskFileError lists every problem of its declared skill folders. A
    skill of the workdir's `.agents/skills` that cannot be used is skipped, with a `warn`ing."""
    skipped: list[Problem] = []
    skills, problems = _discover(task, skipped)
    if problems:
        raise TaskFileError(problems)
    for problem in skipped:
        if warn is not None:
            warn(f"skill skipped: {problem}")
    return skills


def feature_problems(task: Task, *, repository_skills: bool = False) -> list[Problem]:
    """Problems of the task's skills and permission rules that show without starting a server;
    with `repository_skills` (`validate`), those of the workdir's own skills too, which `run`
    skips with a warning instead."""
    skipped: list[Problem] = []
    skills, problems = _discover(task, skipped)
    problems += skipped if repository_skills else []
    enabled = [ext for ext in task.extensions.values() if ext.enabled]
    if task.spec.permissions and all(builtin_workspace_root(ext) for ext in enabled):
        workspace = [*DESCRIPTIONS, *(f"{WORKSPACE}__{name}" for name in DESCRIPTIONS)]
        known = [*(workspace if enabled else ()), *(["load_skill"] if skills else [])]
        for kind, index, rule in unmatched_rules(task.spec.permissions, known):
            line, column = _where(task, "permissions", kind, index)
            problems.append(
                Problem(
                    str(task.file),
                    line,
                    column,
                    f"permissions.{kind}[{index}]",
                    f"the rule {rule!r} matches no tool of the task",
                    _rule_hint(rule, known),
                )
            )
    return problems


def _rule_hint(rule: str, known: list[str]) -> str:
    """`did you mean 'execute_command'?` for a misspelt tool name, else the tools to choose from."""
    tool = rule.split("(", 1)[0].strip()
    close = difflib.get_close_matches(tool, known, n=1, cutoff=0.75)
    if close:
        return f"did you mean {close[0]!r}?"
    tools = ", ".join(known[: len(DESCRIPTIONS)]) or "none"
    return f"tools: {tools}; fix the name before the parenthesis"


def tools_with_skills(
    task: Task, every_tool: Sequence[ToolSpec], allowed: Sequence[ToolSpec], skills: Sequence[Skill]
) -> list[ToolSpec]:
    """The tools offered to the model: the policy's, plus `load_skill` when there are skills.

    Raises ConfigError when a permission rule names none of the task's tools.
    """
    tools = list(allowed)
    names = [name for spec in every_tool for name in answers_to(spec)]
    if skills:
        spec = load_skill_spec(skills)
        names.append(spec.name)
        if policy_allows(task.spec.tools, spec):
            tools.append(spec)
    check_rules_match(task.spec.permissions, names, f"{task.file}:{task.line}: task {task.name!r}")
    return tools


def hook_env(task: Task, env: dict[str, str]) -> dict[str, str]:
    """What a hook's environment starts from: the one execute_command gets, plus `check_env:`."""
    return command_env(task, env)


def guarded(
    task: Task,
    inner: Hub,
    tools: Sequence[ToolSpec],
    skills: Sequence[Skill],
    hooks: HookRunner | None,
) -> Hub:
    """The executor the loop calls: `inner` itself when the task has nothing to enforce."""
    permissions = task.spec.permissions
    if not permissions and hooks is None and not skills:
        return inner
    gate = PermissionGate(permissions, task.workdir) if permissions else None
    return GuardedExecutor(inner, offered=tools, gate=gate, hooks=hooks, skills=skills)


def start_hooks(
    task: Task,
    env: dict[str, str],
    log: HookLog | None,
    warn: Callable[[str], None],
    tools: Sequence[ToolSpec],
    turn: Callable[[], int],
    *,
    mask: Callable[[str], str],
) -> HookRunner | None:
    """The session's hook runner (None when the task has no hooks); warns about `match` globs
    that name no tool: a config file's hooks apply to every task, whatever its tools."""
    if not task.spec.hooks or log is None:
        return None
    for line in unmatched_hook_globs(task, tools):
        log.warning(line)
        warn(f"[{task.name}] {line}")
    return HookRunner(
        task.spec.hooks,
        workdir=task.workdir,
        env=hook_env(task, env),
        session_id=getattr(log, "session_id", ""),
        log=log,
        warn=lambda line: warn(f"[{task.name}] {line}"),
        turn=turn,
        mask=mask,
    )


async def end_hooks(hooks: HookRunner | None, status: str, reason: str) -> None:
    """The session_end hooks; nothing they do changes the outcome."""
    if hooks is None:
        return
    with contextlib.suppress(Exception):
        await hooks.session_end(status, reason)


def unmatched_hook_globs(task: Task, tools: Sequence[ToolSpec]) -> list[str]:
    """Warnings for pre_tool/post_tool `match` globs that name none of the task's tools."""
    names = [spec.name for spec in tools]
    found = []
    for event in ("pre_tool", "post_tool"):
        for hook in getattr(task.spec.hooks, event):
            for glob in hook.match:
                if not any(fnmatch.fnmatchcase(name, glob) for name in names):
                    found.append(f"{event} hook `{hook.run}`: match {glob!r} names no tool")
    return found
