"""The MCP hub: connects the task's MCP servers, lists their tools, calls them (DESIGN section 5).

Every failure of a call (an error result, a JSON-RPC error, a timeout, a crashed or vanished server)
comes back as a `ToolResult` with `is_error=True` for the model; only a required server that cannot
start is an operator error (`McpServerError`, exit code 4).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self

import anyio
from anyio.abc import TaskGroup

from runner.errors import McpAuthError, McpServerError
from runner.mcp.auth import AuthRecord
from runner.mcp.extension import WORKSPACE, ExtensionConfig, ToolPolicy
from runner.mcp.launch import builtin_workspace_root, server_env, workspace_extension
from runner.mcp.limits import DEFAULT_LIMITS, Catalogue, McpLimits, exposed_name
from runner.mcp.local import LocalConnection
from runner.mcp.render import (
    MAX_RESULT_CHARS,
    ConnectionLost,
    EventSink,
    HubEvent,
    StartFailure,
    bound_text,
    policy_allows,
)
from runner.mcp.serverlog import guard_sdk_logging
from runner.mcp.spawn import discard, spawn_early
from runner.redact import Redactor
from runner.settings import WorkspaceLimits
from runner.toolcall import ToolResult, ToolSpec

__all__ = [
    "HubEvent",
    "McpHub",
    "policy_allows",
    "server_env",
    "workspace_extension",
]


class _ListedTool(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str | None: ...
    @property
    def input_schema(self) -> Mapping[str, Any]: ...


class _Server(Protocol):
    """What the hub needs of a connection: an MCP client (`runner.mcp.connection.Connection`), or
    the in-process workspace (`runner.mcp.local.LocalConnection`)."""

    config: ExtensionConfig

    @property
    def name(self) -> str: ...
    @property
    def alive(self) -> bool: ...
    @property
    def tools(self) -> Sequence[_ListedTool]: ...
    @property
    def stderr_path(self) -> Path | None: ...
    def fresh(self) -> _Server: ...
    def mark_dead(self) -> None: ...
    async def start(self, group: TaskGroup) -> None: ...
    async def close(self) -> None: ...
    async def call(
        self, spec: ToolSpec, arguments: dict[str, Any], *, timeout_s: float, on_event: EventSink
    ) -> ToolResult: ...


class McpHub:
    """The task's MCP servers, used as `async with McpHub(...) as hub:`.

    Servers start concurrently on entry; every server and its child processes stop on exit,
    cancellation included.
    """

    def __init__(
        self,
        extensions: Mapping[str, ExtensionConfig],
        *,
        policy: ToolPolicy | None = None,
        workdir: Path,
        artifacts_dir: Path,
        startup_timeout_s: float = 30.0,
        default_tool_timeout_s: float = 120.0,
        base_env: Mapping[str, str] | None = None,
        on_event: EventSink | None = None,
        max_restarts: int = 3,
        max_result_chars: int = MAX_RESULT_CHARS,
        workspace_limits: WorkspaceLimits | None = None,
        redactor: Redactor | None = None,
        limits: McpLimits = DEFAULT_LIMITS,
    ) -> None:
        """`redactor` masks what servers write outside their answers (stderr logs, the SDK's
        log lines); `limits` bound their messages and the tool catalogue."""
        self._policy = policy or ToolPolicy()
        self._limits = limits
        if redactor is not None:
            guard_sdk_logging(redactor)
        self._max_result_chars = max_result_chars
        self._default_timeout_s = default_tool_timeout_s
        self._on_event = on_event
        self._max_restarts = max_restarts
        self._configs = [
            cfg.model_copy(update={"name": cfg.name or key})
            for key, cfg in extensions.items()
            if cfg.enabled
        ]
        self._workdir = workdir
        self._base_env = dict(base_env or {})
        self._connection = functools.partial(
            _connection,
            workdir=workdir,
            artifacts_dir=artifacts_dir,
            base_env=self._base_env,
            startup_timeout_s=startup_timeout_s,
            workspace_limits=workspace_limits,
            redactor=redactor,
            limits=limits,
            on_event=self._emit,
        )
        self._conns: list[_Server] = []
        self._restarts: Counter[str] = Counter()
        self._locks: dict[str, anyio.Lock] = {}
        self._tools: dict[str, tuple[ToolSpec, _Server]] = {}
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        try:
            await self._start_all()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        for conn in self._conns:
            conn.mark_dead()
        # The owner tasks never raise, so the caller's own exception (if any) is not handed to the
        # group: it would come back wrapped in an ExceptionGroup instead of as itself.
        await group.__aexit__(None, None, None)

    @property
    def tools(self) -> list[ToolSpec]:
        """Every tool of every started server, clashing names exposed as `server__tool`."""
        return [spec for spec, _ in self._tools.values()]

    @property
    def allowed_tools(self) -> list[ToolSpec]:
        """The tools the policy lets the model call."""
        return [spec for spec in self.tools if policy_allows(self._policy, spec)]

    @property
    def servers(self) -> list[str]:
        """The servers that started, in configuration order."""
        return [conn.name for conn in self._conns]

    @property
    def auth(self) -> list[AuthRecord]:
        """Which auth each started server with `auth:` used (DESIGN 26), in configuration order;
        the records go on changing as tokens are renewed."""
        records = (getattr(conn, "auth", None) for conn in self._conns)
        return [record for record in records if isinstance(record, AuthRecord)]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool; every failure is an error result, never an exception."""
        entry = self._tools.get(name)
        if entry is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult(f"Error: there is no tool named {name!r}. Tools: {known}.", True)
        spec, conn = entry
        if not policy_allows(self._policy, spec):
            return ToolResult(
                f"Error: tool {name!r} is not allowed by the task's tool policy "
                f"(tools.allow={self._policy.allow}, tools.deny={self._policy.deny}).",
                True,
                denied=True,
            )
        usable = await self._usable(conn)
        if isinstance(usable, ToolResult):
            return usable
        result = await self._call(usable, spec, arguments)
        # A huge result would fill the model's context (and the log) for nothing: cut it here.
        text = bound_text(result.text, self._max_result_chars)
        return result if text is result.text else ToolResult(text, result.is_error)

    async def _start_all(self) -> None:
        # The stdio servers start first: they boot while the SDK is imported (by the first
        # `Connection`) and while the model's client is built in its own thread.
        early = await spawn_early(self._configs, workdir=self._workdir, base_env=self._base_env)
        try:
            self._conns = [
                self._connection(cfg, early=early.pop(cfg.name, None)) for cfg in self._configs
            ]
        finally:
            for process in early.values():  # only when building a connection failed
                await discard(process)
        failures: dict[str, StartFailure] = {}

        async def start(conn: _Server) -> None:
            assert self._group is not None
            if conn.stderr_path is not None:
                self._emit(
                    HubEvent(
                        "stderr", conn.name, f"stderr: {conn.stderr_path}", path=conn.stderr_path
                    )
                )
            try:
                await conn.start(self._group)
            except StartFailure as exc:
                failures[conn.name] = exc

        async with anyio.create_task_group() as starters:
            for conn in self._conns:
                starters.start_soon(start, conn)
        failed = [conn for conn in self._conns if conn.name in failures]
        self._conns = [conn for conn in self._conns if conn.name not in failures]
        for conn in failed:
            self._fail_or_skip(conn, failures[conn.name])
        self._index_tools()

    def _fail_or_skip(self, conn: _Server, exc: StartFailure) -> None:
        name, cfg, log = conn.name, conn.config, conn.stderr_path
        # The endpoint in the sentence itself: a console line drops parenthesised asides.
        at = f" at {cfg.uri}" if cfg.uri else ""
        what = f"MCP server {name!r}{at} failed to start: {exc}"
        where = f" (server stderr: {log})" if log is not None and not cfg.uri else ""
        said = _last_line(log) if log is not None else ""
        what += f"; its stderr ends with: {said!r}" if said else ""
        if exc.config:
            raise McpAuthError(
                f"{what}. Fix the extension's `auth:` (docs/mcp-auth.md); nothing was sent to "
                "the model."
            ) from exc
        if cfg.required:
            raise McpServerError(
                f"{what}{where}. Fix the extension's command or endpoint, or set `required: false` "
                "to run without it."
            ) from exc
        self._emit(HubEvent("warning", name, f"{what}{where}; skipped (optional server)"))

    def _index_tools(self) -> None:
        counts = Counter(tool.name for conn in self._conns for tool in conn.tools)
        catalogue = Catalogue(self._limits)
        # The built-in workspace is admitted to the catalogue first; the order stays the config's.
        admitted = {
            conn.name: catalogue.admit(
                conn.name, ((t.name, t.description or "", t.input_schema) for t in conn.tools)
            )
            for conn in sorted(self._conns, key=lambda conn: conn.name != WORKSPACE)
        }
        self._tools = {}
        for conn in self._conns:
            read_only = {tool.name for tool in conn.tools if _read_only(tool)}
            for remote, description, schema in admitted[conn.name]:
                name = exposed_name(conn.name, remote, counts[remote] > 1)
                spec = ToolSpec(
                    name=name,
                    description=description,
                    input_schema=schema,
                    server=conn.name,
                    remote_name=remote if name != remote else "",
                    read_only=remote in read_only,
                )
                self._tools.setdefault(spec.name, (spec, conn))
        for server, message in catalogue.warnings:
            self._emit(HubEvent("warning", server, message))

    async def _usable(self, conn: _Server) -> _Server | ToolResult:
        """The live connection for a server, restarting a dead one within the restart budget."""
        if conn.alive:  # nearly every call: no lock to take, no extra pass of the event loop
            return conn
        lock = self._locks.setdefault(conn.name, anyio.Lock())
        async with lock:
            current = self._current(conn.name)
            if current.alive:
                return current
            if self._restarts[conn.name] >= self._max_restarts:
                return ToolResult(
                    f"Error: MCP server {conn.name!r} stopped and was already restarted "
                    f"{self._max_restarts} times; its tools are unavailable for the rest of the "
                    f"task (server stderr: {conn.stderr_path}).",
                    True,
                )
            return await self._restart(current)

    async def _restart(self, old: _Server) -> _Server | ToolResult:
        assert self._group is not None
        self._restarts[old.name] += 1
        attempt = self._restarts[old.name]
        await old.close()
        new = old.fresh()
        try:
            await new.start(self._group)
        except StartFailure as exc:
            return ToolResult(
                f"Error: MCP server {old.name!r} stopped, and restarting it failed: {exc} "
                f"(server stderr: {old.stderr_path}).",
                True,
            )
        self._replace(old, new)
        self._emit(
            HubEvent(
                "restart",
                old.name,
                f"MCP server {old.name!r} stopped and was restarted "
                f"({attempt} of {self._max_restarts})",
            )
        )
        return new

    def _replace(self, old: _Server, new: _Server) -> None:
        self._conns = [new if conn is old else conn for conn in self._conns]
        self._tools = {
            name: (spec, new if conn is old else conn) for name, (spec, conn) in self._tools.items()
        }

    def _current(self, name: str) -> _Server:
        return next(conn for conn in self._conns if conn.name == name)

    async def _call(self, conn: _Server, spec: ToolSpec, arguments: dict[str, Any]) -> ToolResult:
        timeout = conn.config.timeout or self._default_timeout_s
        try:
            return await conn.call(spec, arguments, timeout_s=timeout, on_event=self._emit)
        except ConnectionLost:
            return self._lost(conn, spec)

    def _lost(self, conn: _Server, spec: ToolSpec) -> ToolResult:
        conn.mark_dead()
        left = self._max_restarts - self._restarts[conn.name]
        then = (
            "it will be restarted for the next call"
            if left > 0
            else "it has used up its restarts, so its tools are now unavailable"
        )
        where = (
            f"server stderr: {conn.stderr_path}" if conn.config.type == "stdio" else conn.config.uri
        )
        return ToolResult(
            f"Error: MCP server {conn.name!r} closed the connection during {spec.name!r} "
            f"(it crashed, exited or became unreachable; {where}); {then}.",
            True,
        )

    def _emit(self, event: HubEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)


def _last_line(path: Path, limit: int = 300) -> str:
    """The last non-empty line of a server's stderr log (at most `limit` characters), or ''."""
    try:
        with path.open("rb") as file:
            file.seek(max(file.seek(0, 2) - 4096, 0))
            tail = file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:limit] if lines else ""


def _connection(
    config: ExtensionConfig,
    *,
    workdir: Path,
    artifacts_dir: Path,
    base_env: Mapping[str, str],
    startup_timeout_s: float,
    redactor: Redactor | None,
    limits: McpLimits,
    on_event: EventSink,
    workspace_limits: WorkspaceLimits | None = None,
    early: Any | None = None,
) -> _Server:
    """The in-process workspace for the built-in one, else an MCP client (imports the SDK);
    `early` is the server's process if `spawn_early` started it."""
    if builtin_workspace_root(config) is not None:
        return LocalConnection(config, workdir=workdir, base_env=base_env, limits=workspace_limits)
    from runner.mcp.connection import Connection

    return Connection(
        config,
        workdir=workdir,
        stderr_path=artifacts_dir / "mcp" / f"{config.name}.stderr.log",
        base_env=base_env,
        startup_timeout_s=startup_timeout_s,
        redactor=redactor,
        limits=limits,
        on_event=on_event,
        early=early,
    )


def _read_only(tool: _ListedTool) -> bool:
    """Whether a listed tool says it changes nothing: the in-process workspace's `read_only`, or
    an MCP tool's `readOnlyHint` annotation (trusted as the server gives it; DESIGN section 16)."""
    own = getattr(tool, "read_only", None)
    if isinstance(own, bool):
        return own
    return getattr(getattr(tool, "annotations", None), "read_only_hint", None) is True
