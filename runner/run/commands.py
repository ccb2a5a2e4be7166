"""The commands that inspect tasks without running them: `validate` and `prompt`."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.errors import ConfigError, ExitCode, Problem, TaskFileError
from runner.run.features import feature_problems, with_config_hooks
from runner.settings import Settings, environ, load_settings
from runner.task import Task, discover_task_files, load_tasks

__all__ = ["agent_problems", "check_sections", "load_selected_tasks", "print_prompt", "validate"]


def load_selected_tasks(
    paths: Sequence[str], params: Mapping[str, str], settings: Settings
) -> list[Task]:
    """Discover and load tasks with the config's extensions and the process environment."""
    files = discover_task_files(paths)
    tasks = load_tasks(
        files,
        params=params,
        config_extensions=settings.extensions,
        env=environ(),
        config_agents=settings.agents,
    )
    return with_config_hooks(tasks, settings.hooks)


def check_sections(task: Task, settings: Settings) -> None:
    """Raise ConfigError (naming the task) when its prompt sections cannot be built."""
    from runner.prompt import default_prompts_dir, load_sections

    try:
        load_sections(
            [default_prompts_dir(), *settings.prompts, *task.prompt_dirs], task.spec.sections
        )
    except ConfigError as exc:
        raise ConfigError(f"{task.file}:{task.line}: task {task.name!r}: {exc}") from None
    problems = feature_problems(task)  # skills and permission rules
    if problems:
        raise TaskFileError(problems)


def validate(paths: Sequence[str], params: Mapping[str, str], config: Path | None) -> int:
    """Check config, task files and their prompt sections; print every problem."""
    settings = load_settings(config_file=config)
    try:
        tasks = load_selected_tasks(paths, params, settings)
        for task in tasks:
            check_sections(task, settings)
    except TaskFileError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) found", file=sys.stderr)
        return ExitCode.USAGE
    found = [p for task in tasks if task.spec.agents for p in agent_problems(task, settings)]
    problems = list({str(p): p for p in found}.values())  # a suite's defaults: said once
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        return ExitCode.USAGE
    files = {task.file for task in tasks}
    print(f"ok: {len(tasks)} task(s) in {len(files)} file(s)")
    return ExitCode.OK


def agent_problems(task: Task, settings: Settings) -> list[Problem]:
    """The task's agent allowlists checked against its tools (its servers start to list them)."""
    from runner.run.session_tools import task_tool_lists
    from runner.task import agent_tool_problems

    every, allowed = task_tool_lists(task, settings)
    return agent_tool_problems(
        task.file,
        task.line,
        task.spec.agents,
        [t.name for t in every],
        [t.name for t in allowed],
    )


def print_prompt(
    path: str, name: str | None, params: Mapping[str, str], config: Path | None
) -> int:
    """Print the exact system prompt one task would get."""
    settings = load_settings(config_file=config)
    tasks = load_selected_tasks([path], params, settings)
    task = _pick(tasks, name, path)
    from runner.run.agents import offered_tools
    from runner.run.features import task_skills, tools_with_skills
    from runner.run.session_tools import task_system_prompt, task_tool_lists

    every, allowed = task_tool_lists(task, settings)
    skills = task_skills(task)
    tools = offered_tools(task, tools_with_skills(task, every, allowed, skills))
    sys.stdout.write(task_system_prompt(task, settings, tools, environ(), skills=skills))
    return ExitCode.OK


def _pick(tasks: list[Task], name: str | None, path: str) -> Task:
    if name is not None:
        for task in tasks:
            if task.name == name:
                return task
        raise ConfigError(
            f"{path}: no task named {name!r} (tasks: {', '.join(t.name for t in tasks)})"
        )
    if len(tasks) != 1:
        raise ConfigError(
            f"{path} holds {len(tasks)} tasks; choose one with --name "
            f"({', '.join(t.name for t in tasks)})"
        )
    return tasks[0]
