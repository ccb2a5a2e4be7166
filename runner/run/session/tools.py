"""Start a task's MCP servers just long enough to list their tools (for `prompt` and `validate`)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import ConfigError
from runner.settings import Settings, environ
from runner.task import Task
from runner.toolcall import ToolSpec

if TYPE_CHECKING:
    from runner.prompt import Budgeting, Section, Skill, ToolShelf

__all__ = [
    "check_tool_patterns",
    "list_task_tools",
    "offered_with_search",
    "task_budgeting",
    "task_prompt_sections",
    "task_shelf",
    "task_system_prompt",
    "task_tool_lists",
]


def check_tool_patterns(task: Task, tools: list[ToolSpec]) -> None:
    """Raise ConfigError (exit 2) when a `tools.allow`/`tools.deny` glob matches none of the
    tools the task's servers listed (the loader checked tasks with only built-in tools)."""
    from runner.mcp import tool_names, unmatched_patterns

    names = tool_names((spec.name, spec.call_name, spec.server) for spec in tools)
    missed = unmatched_patterns(task.spec.tools, names)
    if missed:
        lines = [f"tools.{m.field}[{m.index}]: {m.message} ({m.hint})" for m in missed]
        raise ConfigError(f"{task.file}:{task.line}: task {task.name!r}: " + "; ".join(lines))


def task_shelf(
    task: Task, settings: Settings, tools: list[ToolSpec], context_window: int | None
) -> ToolShelf:
    """The tools of `tools` that wait behind `find_tools` (DESIGN 28): the config's
    `tool_search`, with the task's own mode over it; `context_window` of the task's model."""
    from runner.prompt import ToolSearch, ToolShelf, defer

    config = settings.tool_search
    search = ToolSearch(
        mode=task.spec.tool_search or config.mode,
        max_tools=config.max_tools,
        window_share=config.window_share,
    )
    return ToolShelf.of(defer(tools, search, context_window))


def offered_with_search(tools: list[ToolSpec], shelf: ToolShelf) -> list[ToolSpec]:
    """`tools`, and `find_tools` when some of them are deferred."""
    from runner.prompt import find_tools_spec

    return [*tools, find_tools_spec()] if shelf else tools


def task_system_prompt(
    task: Task,
    settings: Settings,
    tools: list[ToolSpec],
    env: dict[str, str],
    sections: dict[str, str] | None = None,
    mask: Callable[[str], str] | None = None,
    skills: Sequence[Skill] = (),
    shelf: ToolShelf | None = None,
) -> str:
    """The system prompt of `task` offering `tools` (and `skills`), exactly as a run renders it;
    `sections` replace the task's inline sections (a sub-agent's ROLE); `mask` hides secrets in
    what the prompt quotes from the task (its success check); `shelf`: the deferred tools."""
    from runner.prompt import render_sections

    return render_sections(
        task_prompt_sections(task, settings, tools, env, sections, mask, skills, shelf)
    )


def task_prompt_sections(
    task: Task,
    settings: Settings,
    tools: list[ToolSpec],
    env: dict[str, str],
    sections: dict[str, str] | None = None,
    mask: Callable[[str], str] | None = None,
    skills: Sequence[Skill] = (),
    shelf: ToolShelf | None = None,
) -> list[Section]:
    """The sections `task_system_prompt` renders."""
    from runner.prompt import build_sections, host_facts, skills_section

    servers: dict[str, list[ToolSpec]] = {}
    for spec in tools:
        if spec.server:  # the runner's own tools (load_skill, sub_agent) belong to no MCP server
            servers.setdefault(spec.server, []).append(spec)
    built = build_sections(
        workdir=task.workdir,
        prompt_dirs=[*settings.prompts, *task.prompt_dirs],
        inline_sections=task.spec.sections if sections is None else sections,
        servers=servers,
        tools=tools,
        facts=host_facts(env),
        budgeting=task_budgeting(task, mask or (lambda text: text)),
        max_file_bytes=settings.prompt_file_max_bytes,
        native=task.spec.tool_mode == "native",
        shelf=shelf,
    )
    if skills:  # after the dynamic sections, before the tool catalogue
        at = next(i for i, section in enumerate(built) if section.title == "MCP SERVERS")
        built.insert(at, skills_section(skills))
    return built


def task_budgeting(task: Task, mask: Callable[[str], str]) -> Budgeting:
    """What the prompt tells the agent about its limits, its check and its requirements."""
    from runner.prompt import Budgeting

    limits, success = task.spec.limits, task.spec.success
    require = success.require
    requirements = []
    if require.min_tool_calls:
        requirements.append(f"at least {require.min_tool_calls} tool call(s) that run")
    if require.changed_files:
        requirements.append("changes to the files of the working directory")
    if require.no_denied_calls:
        requirements.append("no call of a tool you are not allowed to use")
    return Budgeting(
        max_turns=limits.max_turns,
        max_tokens=limits.max_tokens,
        max_cost_usd=limits.max_cost_usd,
        timeout_s=limits.timeout,
        check=mask(success.check) if success.check else None,
        check_retries=success.retries,
        requirements=tuple(requirements),
    )


def list_task_tools(task: Task, settings: Settings) -> list[ToolSpec]:
    """The tools the task may call, as its run offers them."""
    from runner.run.agents import offered_tools

    every, allowed = task_tool_lists(task, settings)
    tools = offered_tools(task, allowed)
    check_tool_patterns(task, [*every, *tools])
    return tools


def task_tool_lists(task: Task, settings: Settings) -> tuple[list[ToolSpec], list[ToolSpec]]:
    """(every tool of the task's servers, those its policy allows), from started servers."""
    import anyio

    from runner.mcp import McpHub, McpLimits

    async def collect() -> tuple[list[ToolSpec], list[ToolSpec]]:
        with tempfile.TemporaryDirectory(prefix="agent-runner-prompt-") as artifacts:
            async with McpHub(
                {k: v for k, v in task.extensions.items() if v.enabled},
                policy=task.spec.tools,
                workdir=task.workdir,
                artifacts_dir=Path(artifacts),
                startup_timeout_s=settings.mcp_startup_timeout_s,
                default_tool_timeout_s=settings.tool_timeout_s,
                base_env=environ(),
                limits=McpLimits.from_settings(settings),
            ) as hub:
                return hub.tools, hub.allowed_tools

    return anyio.run(collect)
