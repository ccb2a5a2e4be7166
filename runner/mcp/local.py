"""The built-in workspace, served in-process: the hub calls its tools as methods.

Over stdio, each task would start a Python process that imports the MCP SDK (about 1 s of CPU),
and every call would cross a pipe twice. In-process, a task using only the workspace never imports
the SDK, and a call costs a validation and a method call. What the model sees is the same: the
tools are listed with the names, descriptions and input schemas the stdio server publishes (the
argument models are built from the same signatures, the way the SDK builds them), refusals read
the same, and commands get the same minimal environment a stdio server would. A task that
replaces the workspace's `cmd` or `args` gets a stdio server as before.

Commands started by `execute_command` are registered with the process-wide reaper, which kills
them if the runner dies without cleaning up (a SIGKILL); a stdio server did that when its pipe
closed.
"""

from __future__ import annotations

import functools
import inspect
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, cast

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from runner.mcp.extension import ExtensionConfig
from runner.mcp.launch import builtin_workspace_root, server_env
from runner.mcp.render import EventSink, HubEvent, StartFailure, timeout_text
from runner.settings import WorkspaceLimits
from runner.toolcall import ToolResult, ToolSpec
from runner.workspace import (
    DESCRIPTIONS,
    READ_ONLY,
    WorkspaceError,
    WorkspaceTools,
    error_text,
    shared_reaper,
)

__all__ = ["LocalConnection", "LocalTool", "local_tools"]


_ANNOTATED: Any = Annotated
"""`Annotated`, subscripted with a type known only at run time."""


class _Arguments(BaseModel):
    """Base of every tool's argument model, configured as the SDK's own base."""

    model_config = ConfigDict(arbitrary_types_allowed=True)


@dataclass(frozen=True)
class LocalTool:
    """One in-process tool: what the hub lists, and how to call it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    arguments: type[BaseModel]
    run: Callable[..., Awaitable[str]]
    read_only: bool = False
    """The tool changes nothing (the stdio server publishes it with `readOnlyHint`)."""


def local_tools(tools: WorkspaceTools) -> list[LocalTool]:
    """The workspace's tools, in the stdio server's order."""
    return [_local_tool(name, getattr(tools, name)) for name in DESCRIPTIONS]


_ON_THE_LOOP = frozenset({"read_file", "write_to_file", "replace_in_file"})
"""Sync tools that touch one file (a read is capped at 2 MB, a write is one model reply): they run
on the event loop, since a worker-thread hop costs 0.2-0.4 ms, more than the work. A listing can
walk a big tree, so list_files runs in a worker thread, as the SDK runs every sync tool."""


def _local_tool(name: str, method: Callable[..., Any]) -> LocalTool:
    arguments, schema = _arguments(name)
    run: Callable[..., Awaitable[str]]
    if inspect.iscoroutinefunction(method):
        run = method
    elif name in _ON_THE_LOOP:

        async def run(**kwargs: Any) -> str:
            return cast(str, method(**kwargs))

    else:

        async def run(**kwargs: Any) -> str:
            return await anyio.to_thread.run_sync(functools.partial(method, **kwargs))

    return LocalTool(
        name=name,
        description=DESCRIPTIONS[name],
        input_schema=schema,
        arguments=arguments,
        run=run,
        read_only=name in READ_ONLY,
    )


@functools.cache
def _arguments(name: str) -> tuple[type[BaseModel], dict[str, Any]]:
    """A tool's argument model and input schema, built once per process (about 5 ms each)."""
    method = getattr(WorkspaceTools, name)
    fields: dict[str, Any] = {}
    # As the SDK's `func_metadata` builds them, so that the schemas are the stdio server's.
    for param in list(inspect.signature(method, eval_str=True).parameters.values())[1:]:
        annotated = _ANNOTATED[param.annotation, Field()]
        empty = param.default is inspect.Parameter.empty
        fields[param.name] = annotated if empty else (annotated, param.default)
    model: type[BaseModel] = create_model(f"{name}Arguments", __base__=_Arguments, **fields)
    return model, model.model_json_schema(by_alias=True)


class LocalConnection:
    """The hub's view of the in-process workspace: it starts, lists and calls like a server."""

    stderr_path: Path | None = None
    """No process, so no stderr log."""

    def __init__(
        self,
        config: ExtensionConfig,
        *,
        workdir: Path,
        base_env: Mapping[str, str],
        limits: WorkspaceLimits | None = None,
    ) -> None:
        root = builtin_workspace_root(config)
        assert root is not None, "only the built-in workspace is served in-process"
        self.config = config
        self._root = workdir / root
        self._env = server_env(base_env, config.envs)
        self._limits = limits
        self._output: Path | None = None
        self._tools: dict[str, LocalTool] = {}

    @property
    def name(self) -> str:
        """The server's name."""
        return self.config.name

    @property
    def alive(self) -> bool:
        """Always, once started: there is no process to lose."""
        return bool(self._tools)

    @property
    def tools(self) -> list[LocalTool]:
        """The tools, in the stdio server's order."""
        return list(self._tools.values())

    def fresh(self) -> LocalConnection:
        """Never needed (nothing to restart); here so the hub can treat connections alike."""
        return self

    def mark_dead(self) -> None:
        """Stop serving: the tools go, and so do the command outputs."""
        self._tools = {}
        if self._output is not None:
            shutil.rmtree(self._output, ignore_errors=True)
            shared_reaper().forget_folder(self._output)
            self._output = None

    async def start(self, group: TaskGroup) -> None:
        """Build the tools for the workdir.

        Raises:
            StartFailure: the workspace root is not a folder.
        """
        if not self._root.is_dir():
            raise StartFailure(f"the workspace root {self._root} is not a folder")
        # Full command outputs may hold secrets the runner cannot mask: they stay in a temporary
        # folder, removed at close, as the stdio server's were.
        self._output = Path(tempfile.mkdtemp(prefix="agent-runner-workspace-"))
        workspace = WorkspaceTools(
            self._root, self._output, env=self._env, watcher=shared_reaper(), limits=self._limits
        )
        self._tools = {tool.name: tool for tool in local_tools(workspace)}

    async def close(self) -> None:
        """The same as `mark_dead`: nothing runs in the background."""
        self.mark_dead()

    async def call(
        self, spec: ToolSpec, arguments: dict[str, Any], *, timeout_s: float, on_event: EventSink
    ) -> ToolResult:
        """Call a tool; every failure, a timeout included, is an error result."""
        tool = self._tools.get(spec.call_name)
        if tool is None:
            return ToolResult(f"Error executing tool {spec.call_name}: unknown tool", True)
        try:
            values = tool.arguments.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(f"Error executing tool {tool.name}: {exc}", True)
        kwargs = {field: getattr(values, field) for field in type(values).model_fields}
        try:
            with anyio.move_on_after(timeout_s):
                text = await tool.run(**kwargs)
                return ToolResult(text or "(no output)")
        except (WorkspaceError, OSError) as exc:
            return ToolResult(f"Error executing tool {tool.name}: {error_text(exc)}", True)
        except Exception as exc:  # a bug in a tool must not end the task
            on_event(
                HubEvent(
                    "warning",
                    self.name,
                    f"tool {tool.name!r} raised {type(exc).__name__}: {exc}",
                    tool=tool.name,
                )
            )
            return ToolResult(f"Error executing tool {tool.name}", True)
        return ToolResult(timeout_text(tool=spec.name, server=self.name, timeout_s=timeout_s), True)
