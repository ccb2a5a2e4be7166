"""Start a task's MCP servers just long enough to list their tools (for `prompt` and `validate`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from runner.settings import Settings, environ
from runner.task import Task
from runner.toolspec import ToolSpec

__all__ = ["list_task_tools"]


def list_task_tools(task: Task, settings: Settings) -> dict[str, list[ToolSpec]]:
    """The tools the task may call (as its run offers them), grouped by server."""
    import anyio

    from runner.hub import McpHub

    async def collect() -> dict[str, list[ToolSpec]]:
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
                servers: dict[str, list[ToolSpec]] = {}
                for spec in hub.allowed_tools:
                    servers.setdefault(spec.server, []).append(spec)
                return servers

    return anyio.run(collect)
