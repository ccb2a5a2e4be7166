"""The commands that inspect tasks without running them: `validate` and `prompt`."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from runner.errors import ConfigError, ExitCode, Problem, RunnerError
from runner.run.plan.jobs import self_grading_problem
from runner.run.plan.loading import load_for_validate, load_selected_tasks, section_problems
from runner.settings import Settings, environ, load_settings
from runner.task import Task

__all__ = ["agent_problems", "annotate_config_error", "print_prompt", "report_error", "validate"]


def validate(paths: Sequence[str], params: Mapping[str, str], config: Path | None) -> int:
    """Check config, task files, their prompt sections, skills, permission rules and agents;
    print every problem of every check at once, each at its own file and line."""
    settings = load_settings(config_file=config)
    tasks, problems = load_for_validate(paths, params, settings)
    for task in tasks:
        problems += section_problems(task, settings)
        model = task.spec.model or settings.model
        if model and (grading := self_grading_problem(task, model, settings)):
            line, column = task.where(("success", "rubric", "grader")) if task.where else (1, 1)
            problems.append(f"{task.file}:{line}:{column}: {grading}")
        if task.spec.agents:
            # The agents' allowlists need the task's servers started: every task that could be
            # built is checked, whatever the other checks found (DESIGN 2: every problem at once).
            problems += [str(problem) for problem in agent_problems(task, settings)]
    if problems:
        problems = list(dict.fromkeys(problems))  # a suite's defaults: said once
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        annotate_config_error("\n".join(problems), json_output=False)
        return ExitCode.USAGE
    files = {task.file for task in tasks}
    print(f"ok: {len(tasks)} task(s) in {len(files)} file(s)")
    return ExitCode.OK


def agent_problems(task: Task, settings: Settings) -> list[Problem]:
    """The task's agent allowlists checked against its tools (its servers start to list them)."""
    from runner.run.session import task_tool_lists
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
    path: str,
    name: str | None,
    params: Mapping[str, str],
    config: Path | None,
    *,
    stats: bool = False,
    json_output: bool = False,
    tool_mode: Literal["xml", "native"] | None = None,
    model: str | None = None,
) -> int:
    """Print the exact system prompt one task would get; with `stats`, what its first request
    carries by section and by tool instead (DESIGN 28), as JSON with `json_output`. `tool_mode`
    and `model` stand in for the task's (the model decides the window and the wire shape)."""
    settings = load_settings(config_file=config)
    tasks = load_selected_tasks([path], params, settings)
    task = _pick(tasks, name, path)
    if tool_mode is not None:
        from runner.run.turn import task_in_mode

        task = task_in_mode(task, tool_mode)
    from runner.llm import lookup_model
    from runner.prompt import prompt_stats, render_sections, stats_text
    from runner.redact import Redactor
    from runner.run.agents import offered_tools
    from runner.run.guard import report_finding_spec, task_skills, tools_with_skills
    from runner.run.session import (
        offered_with_search,
        task_prompt_sections,
        task_shelf,
        task_tool_lists,
    )
    from runner.toolcall import ATTEMPT_COMPLETION

    every, allowed = task_tool_lists(task, settings)
    skills = task_skills(task, lambda line: print(f"warning: {line}", file=sys.stderr))
    own = tools_with_skills(task, every, allowed, skills)
    tools = offered_tools(task, [*own, *([report_finding_spec()] if task.spec.findings else [])])
    spec = model or task.spec.model or settings.model or ""
    info = lookup_model(spec.split(":", 1)[-1], settings.models) if spec else None
    shelf = task_shelf(task, settings, tools, info.context_window if info else None)
    tools = offered_with_search(tools, shelf)
    mask = Redactor([*settings.secret_values(), *task.secrets]).text
    sections = task_prompt_sections(
        task, settings, tools, environ(), skills=skills, mask=mask, shelf=shelf
    )
    if not stats:
        sys.stdout.write(render_sections(sections))
        return ExitCode.OK
    native = task.spec.tool_mode == "native"
    catalogue = [*tools, ATTEMPT_COMPLETION]
    request_tools = shelf.visible(catalogue) if native else None
    provider = spec.split(":", 1)[0]
    found = prompt_stats(sections, catalogue, task.prompt, request_tools, shelf.deferred, provider)
    if json_output:
        print(json.dumps(found, indent=2))
    else:
        sys.stdout.write(stats_text(found))
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


def report_error(error: RunnerError, *, json_output: bool, stdout_taken: bool = False) -> int:
    """Say what stopped the command (stderr) and return its exit code. Under `--output json`,
    stdout's one JSON document is the error, `{"error": ..., "exit_code": 2}`; a configuration
    error is annotated as `annotate_config_error` says (on stderr when stdout is `taken` by the
    JSON document or `--events -`)."""
    print(f"agent-runner: {error}", file=sys.stderr)
    if json_output:
        print(json.dumps({"error": str(error), "exit_code": int(error.exit_code)}), flush=True)
    if error.exit_code == ExitCode.USAGE:
        taken = json_output or stdout_taken
        annotate_config_error(str(error), json_output=taken, outputs=True)
    return error.exit_code


def annotate_config_error(text: str, *, json_output: bool, outputs: bool = False) -> None:
    """Under GitHub Actions, `::error` annotations at the file and line of a configuration error
    (on stderr under `--output json`, whose stdout is one JSON document); with `outputs`, also
    the step outputs (`exit-code`, `result`) and a step summary line."""
    from runner.report import GitHubActions, config_error_annotations, write_usage_error

    github = GitHubActions.from_env(environ())
    if github is None:
        return
    stream = sys.stderr if json_output else sys.stdout
    for line in config_error_annotations(text):
        print(line, file=stream, flush=True)
    if outputs:
        write_usage_error(github, text)
