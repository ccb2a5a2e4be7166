"""Loading the tasks a run or a check selects, with what must hold before any of them runs.

`load_selected_tasks` finds and loads the task files with the config's extensions, agents and
hooks; `check_config_extensions` names each bad key of the config's `extensions:` once for the
run; `check_sections` builds a task's prompt sections and checks its skills and permission rules
(`runner.run.guard.feature_problems`) without starting a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runner.errors import ConfigError, Problem, TaskFileError
from runner.run.guard import (
    check_network,
    feature_problems,
    with_config_findings,
    with_config_hooks,
)
from runner.settings import Settings, environ
from runner.task import Task, discover_task_files, load_tasks

__all__ = [
    "check_config_extensions",
    "check_sections",
    "load_for_validate",
    "load_selected_tasks",
    "section_problems",
]


def load_selected_tasks(
    paths: Sequence[str], params: Mapping[str, str], settings: Settings
) -> list[Task]:
    """Discover and load tasks with the config's extensions and the process environment."""
    check_config_extensions(settings)
    check_network(settings)
    files = discover_task_files(paths)
    tasks = load_tasks(
        files,
        params=params,
        config_extensions=settings.extensions,
        env=environ(),
        config_agents=settings.agents,
    )
    return with_config_findings(with_config_hooks(tasks, settings.hooks), settings.findings)


def load_for_validate(
    paths: Sequence[str], params: Mapping[str, str], settings: Settings
) -> tuple[list[Task], list[str]]:
    """As `load_selected_tasks`, but every problem is returned, with the tasks that could be
    built anyway (for `validate`, which checks those further); such a task must never run."""
    problems: list[str] = []
    try:
        check_config_extensions(settings)
    except ConfigError as exc:
        problems.extend(str(exc).splitlines())
    found: list[Problem] = []
    tasks = load_tasks(
        discover_task_files(paths),
        params=params,
        config_extensions=settings.extensions,
        env=environ(),
        config_agents=settings.agents,
        problems=found,
    )
    problems.extend(str(problem) for problem in found)
    return with_config_hooks(tasks, settings.hooks), problems


def check_config_extensions(settings: Settings) -> None:
    """Raise ConfigError naming the config file and line of each bad key of its `extensions:`,
    once for the run (the task loader leaves such keys to this check)."""
    import difflib

    from pydantic import ValidationError

    from runner.mcp import ExtensionConfig

    known = sorted(ExtensionConfig.model_fields)
    lines = []
    for name, fields in settings.extensions.items():
        try:
            ExtensionConfig.model_validate({"name": name, **fields})
            continue
        except ValidationError as exc:
            errors = exc.errors()
        for error in errors:
            key = str(error["loc"][0]) if error["loc"] else ""
            # An entry may set a few fields of a task's server (no `cmd`), and `${VAR}` is
            # filled in later: those are judged once merged, in the task.
            if not key or error["type"] == "missing" or "${" in str(error.get("input")):
                continue
            where = settings.where("extensions", name, key)
            if error["type"] == "extra_forbidden":
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
                lines.append(f"{where}: extensions.{name}.{key}: unknown key ({hint})")
            else:
                lines.append(f"{where}: extensions.{name}.{key}: {error['msg']}")
    if lines:
        raise ConfigError("\n".join(lines))


def section_problems(task: Task, settings: Settings) -> list[str]:
    """Every problem `check_sections` would raise for, as lines (`validate`: the workdir's own
    skills count too, which `run` skips with a warning)."""
    try:
        check_sections(task, settings, repository_skills=True)
    except TaskFileError as exc:
        return [str(problem) for problem in exc.problems]
    except ConfigError as exc:
        # The sections did not build; the skills and permission rules may have problems too.
        found = feature_problems(task, repository_skills=True)
        return [str(exc), *(str(problem) for problem in found)]
    return []


def check_sections(task: Task, settings: Settings, *, repository_skills: bool = False) -> None:
    """Raise ConfigError (naming the task) when its prompt sections cannot be built; with
    `repository_skills` (`validate`), also when a skill of the workdir's own is unusable."""
    from runner.prompt import default_prompts_dir, load_sections

    try:
        load_sections(
            [default_prompts_dir(), *settings.prompts, *task.prompt_dirs], task.spec.sections
        )
    except ConfigError as exc:
        raise ConfigError(f"{task.file}:{task.line}: task {task.name!r}: {exc}") from None
    problems = feature_problems(task, repository_skills=repository_skills)  # skills, rules
    if problems:
        raise TaskFileError(problems)
