"""Start a task's MCP servers just long enough to list their tools (for `prompt` and `validate`)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runner.settings import Settings, environ
from runner.task import Task
from runner.toolcall import ToolSpec

if TYPE_CHECKING:
    from runner.prompt import Skill

__all__ = ["list_task_tools", "task_system_prompt", "task_tool_lists"]


def task_system_prompt(
    task: Task,
    settings: Settings,
    tools: list[ToolSpec],
    env: dict[str, str],
    sections: dict[str, str] | None = None,
    skills: Sequence[Skill] = (),
) -> str:
    """The system prompt of `task` offering `tools` (and `skills`), exactly as a run renders it;
    `sections` replace the task's inline sections (a sub-agent's ROLE)."""
    from runner.prompt import build_sections, host_facts, render_sections, skills_section

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
    )
    if skills:  # after the dynamic sections, before the tool catalogue
        at = next(i for i, section in enumerate(built) if section.title == "MCP SERVERS")
        built.insert(at, skills_section(skills))
    return render_sections(built)


def list_task_tools(task: Task, settings: Settings) -> list[ToolSpec]:
    """The tools the task may call, as its run offers them."""
    from runner.run.agents import offered_tools

    return offered_tools(task, task_tool_lists(task, settings)[1])


def task_tool_lists(task: Task, settings: Settings) -> tuple[list[ToolSpec], list[ToolSpec]]:
    """(every tool of the task's servers, those its policy allows), from started servers."""
    import anyio

    from runner.mcp import McpHub

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
            ) as hub:
                return hub.tools, hub.allowed_tools

    return anyio.run(collect)
