"""One live connection to one MCP server, owned by its own background task.

The SDK's client context (transport task groups, the stdio process) lives in an owner task that the
hub's task group runs, never in the caller's task: a transport that dies cancels only its owner,
not the agent loop that happened to be waiting on a call.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from runner.mcp.auth import AuthError, AuthRecord, open_auth
from runner.mcp.extension import ExtensionConfig
from runner.mcp.limits import DEFAULT_LIMITS, McpLimits
from runner.mcp.render import ConnectionLost, EventSink, HubEvent, StartFailure, timeout_text
from runner.mcp.results import CONNECTION_CLOSED, REQUEST_TIMEOUT, render_error, render_result
from runner.mcp.spawn import discard, stdio_server_env
from runner.mcp.stdio import stdio_transport
from runner.redact import Redactor, register_secrets
from runner.toolcall import ToolResult, ToolSpec

__all__ = ["Connection"]

_MAX_TOOL_PAGES = 100
_GRACE_S = 5.0
"""Extra time past a call's timeout before the hub gives up on the SDK's own timeout firing."""
_LOCAL_ERRORS = (CONNECTION_CLOSED, REQUEST_TIMEOUT)
"""Codes the client makes up itself; any other error answering the handshake is the server's."""


class Connection:
    """A server's client session, its tools, and whether it is still usable."""

    def __init__(
        self,
        config: ExtensionConfig,
        *,
        workdir: Path,
        stderr_path: Path,
        base_env: Mapping[str, str],
        startup_timeout_s: float,
        redactor: Redactor | None = None,
        limits: McpLimits = DEFAULT_LIMITS,
        on_event: EventSink | None = None,
        early: Any | None = None,
    ) -> None:
        """`early` is the server's process when `runner.mcp.spawn` has started it already."""
        self.config = config
        self._early = early
        self._redactor = redactor
        self._limits = limits
        self._on_event = on_event
        self.stderr_path = stderr_path
        self._workdir = workdir
        self._base_env = base_env
        self._startup_timeout_s = startup_timeout_s
        self._attempts = limits.connect_attempts
        self.client: Client | None = None
        self.tools: list[types.Tool] = []
        self.auth: AuthRecord | None = None
        """Which auth the server used (`auth:`), once its first token is obtained."""
        self._server_auth: Any = None
        self._closing = anyio.Event()
        self._done = anyio.Event()

    @property
    def name(self) -> str:
        """The server's name."""
        return self.config.name

    @property
    def alive(self) -> bool:
        """False once the owner task ended or a call saw the connection close."""
        return self.client is not None

    def fresh(self) -> Connection:
        """A new, unstarted connection to the same server, for a restart (tried once: a call
        waits on it, and the hub says when the server is gone)."""
        again = Connection(
            self.config,
            workdir=self._workdir,
            stderr_path=self.stderr_path,
            base_env=self._base_env,
            startup_timeout_s=self._startup_timeout_s,
            redactor=self._redactor,
            limits=self._limits,
            on_event=self._on_event,
        )
        again._attempts = 1
        return again

    def mark_dead(self) -> None:
        """Stop using this connection; its owner task is told to shut it down."""
        self.client = None
        self._closing.set()

    async def start(self, group: TaskGroup) -> None:
        """Start the owner task in `group` and return once the tools are listed.

        Raises:
            StartFailure: the server did not start, connect or list its tools in time.
        """
        for attempt in range(1, self._attempts + 1):
            try:
                await group.start(self._own)
                return
            except Exception as exc:
                if not self._retry(exc, attempt):
                    if isinstance(exc, StartFailure):
                        raise
                    raise self._auth_failure(exc) or StartFailure(f"{_describe(exc)}") from exc
            wait = min(
                self._limits.connect_backoff_s * 2 ** (attempt - 1),
                self._limits.connect_max_backoff_s,
            )
            await anyio.sleep(wait)
            self._closing, self._done = anyio.Event(), anyio.Event()

    def _auth_failure(self, exc: BaseException) -> StartFailure | None:
        """A failure to get a token, or the server refusing the one it got: a configuration
        error (exit 2) unless the authorization server was unreachable (exit 4)."""
        auth = self.config.auth
        if auth is None:
            return None
        found = _find(exc, AuthError)
        if isinstance(found, AuthError):
            return StartFailure(f"auth ({auth.type}): {found}", config=found.kind == "config")
        refused = _find(exc, httpx2.HTTPStatusError)
        status = refused.response.status_code if isinstance(refused, httpx2.HTTPStatusError) else 0
        if status in {401, 403} or getattr(self._server_auth, "refused", False):
            return StartFailure(
                f"auth ({auth.type}): the server refused the token it was given (HTTP "
                f"{status or 401}): check the token's scopes and audience, and `auth:`",
                config=True,
            )
        return None

    def _retry(self, exc: Exception, attempt: int) -> bool:
        """Whether to try a remote server again: it was unreachable or answered 429/5xx, as a
        provider would be retried (a server restarting, a deploy under way)."""
        left = self._attempts - attempt
        if self.config.type == "stdio" or left <= 0 or not _unreachable(exc):
            return False
        self._warn(
            f"at {self.config.uri} is unreachable ({_describe(exc)}); trying again"
            f" ({left} attempt{'s' if left != 1 else ''} left)"
        )
        return True

    async def close(self) -> None:
        """Shut the connection down and wait until its process (if any) is gone."""
        self.mark_dead()
        await self._done.wait()

    async def call(
        self, spec: ToolSpec, arguments: dict[str, Any], *, timeout_s: float, on_event: EventSink
    ) -> ToolResult:
        """Call a tool; every failure is an error result, but a lost server raises.

        Raises:
            ConnectionLost: the server crashed, exited or became unreachable.
        """
        client = self.client
        if client is None:
            raise ConnectionLost(self.name)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            text = f"{spec.name}: {message or ''} ({progress:g}{f'/{total:g}' if total else ''})"
            on_event(
                HubEvent(
                    "progress", self.name, text, tool=spec.name, progress=progress, total=total
                )
            )

        try:
            with anyio.move_on_after(timeout_s + _GRACE_S) as scope:
                result = await client.call_tool(
                    spec.call_name,
                    arguments,
                    read_timeout_seconds=timeout_s,
                    progress_callback=on_progress,
                )
                return render_result(result)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise ConnectionLost(self.name) from exc
            return ToolResult(
                render_error(exc, tool=spec.name, server=self.name, timeout_s=timeout_s), True
            )
        except anyio.get_cancelled_exc_class():
            if _really_cancelled():
                raise
            raise ConnectionLost(self.name) from None
        except (ValidationError, RuntimeError, OSError, anyio.BrokenResourceError) as exc:
            return self._failed(spec, exc)
        except Exception as exc:  # a transport or SDK failure must not end the task
            self.mark_dead()
            return self._failed(spec, exc)
        assert scope.cancelled_caught
        return ToolResult(timeout_text(tool=spec.name, server=self.name, timeout_s=timeout_s), True)

    def _failed(self, spec: ToolSpec, exc: Exception) -> ToolResult:
        return ToolResult(
            f"Error: calling {spec.name!r} on MCP server {self.name!r} failed: "
            f"{type(exc).__name__}: {exc}",
            True,
        )

    async def _own(self, *, task_status: TaskStatus[None]) -> None:
        started = False
        deadline = anyio.current_time() + self._startup_timeout_s
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                async with self._client() as client:
                    self.tools = await _list_tools(client, self._limits.max_catalogue_chars)
                    scope.deadline = math.inf
                    self.client = client
                    started = True
                    task_status.started()
                    await self._closing.wait()
            if not started:
                raise StartFailure(
                    f"did not start and list its tools within {self._startup_timeout_s:g} s"
                )
        except Exception:
            if not started:
                raise
            # A transport that failed after startup: the calls see the closed connection.
        finally:
            self.client = None
            early, self._early = self._early, None
            if early is not None:  # never handed to a transport (e.g. its log could not open)
                await discard(early)
            self._done.set()

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Client]:
        """The connected client; a stdio server is spoken to in the handshake era first.

        In the 2026 era every request carries the client's info and capabilities and the server
        answers each one on a fresh per-request connection, about 0.2 ms a call; a stdio
        connection, which lives exactly as long as its server process, gains nothing from that.
        A server that refuses the handshake is started again and reached in the 2026 era.
        """
        async with AsyncExitStack() as stack:
            if self.config.type != "stdio":
                yield await self._connect(stack, await self._remote_transport(stack), "auto")
                return
            self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
            errlog: TextIO = stack.enter_context(
                self.stderr_path.open("a", encoding="utf-8", errors="replace")
            )
            try:
                early, self._early = self._early, None
                client = await self._connect(stack, self._stdio_transport(errlog, early), "legacy")
            except Exception as exc:
                if not _refused(exc):
                    raise
                # A 2026-only server; the refused attempt has already stopped its process.
                client = await self._connect(stack, self._stdio_transport(errlog), "auto")
            yield client

    async def _connect(self, stack: AsyncExitStack, transport: Any, mode: str) -> Client:
        client = Client(
            transport,
            mode=mode,
            read_timeout_seconds=self._startup_timeout_s,
            client_info=types.Implementation(name="agent-runner", version="1"),
        )
        return await stack.enter_async_context(client)

    def _stdio_transport(self, errlog: TextIO, process: Any | None = None) -> Any:
        cfg = self.config
        assert cfg.cmd is not None  # ExtensionConfig validates it for enabled servers
        params = StdioServerParameters(
            command=cfg.cmd,
            args=list(cfg.args),
            env=stdio_server_env(cfg, self._base_env),
            cwd=self._workdir,
        )
        return stdio_transport(
            params,
            errlog,
            redactor=self._redactor,
            max_line_chars=self._limits.max_message_chars,
            on_warning=self._warn,
            process=process,
        )

    def _warn(self, text: str) -> None:
        if self._on_event is not None:
            self._on_event(HubEvent("warning", self.name, f"MCP server {self.name!r} {text}"))

    async def _remote_transport(self, stack: AsyncExitStack) -> Any:
        cfg = self.config
        assert cfg.uri is not None
        auth: httpx2.Auth | None = None
        if cfg.auth is not None:
            server_auth = await open_auth(
                cfg.auth,
                server=self.name,
                server_url=cfg.uri,
                stack=stack,
                env=self._base_env,
                cwd=self._workdir,
                register=register_secrets,
            )
            self.auth, self._server_auth = server_auth.record, server_auth
            auth = server_auth
        if cfg.type == "sse":
            return sse_client(cfg.uri, headers=dict(cfg.headers) or None, auth=auth)
        http = await stack.enter_async_context(
            create_mcp_http_client(headers=dict(cfg.headers) or None, auth=auth)
        )
        return streamable_http_client(cfg.uri, http_client=http)


async def _list_tools(client: Client, max_chars: int) -> list[types.Tool]:
    """The server's tools, page by page, until the pages hold more than `max_chars` (the hub
    then drops what does not fit in the catalogue, with a warning)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    size = 0
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        size += sum(len(tool.description or "") for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None or size > max_chars:
            break
    return tools


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "the server closed the connection before it finished starting (did it exit?)"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or text}"
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, StartFailure) else text


def _unreachable(exc: BaseException) -> bool:
    """A connection that failed, or an answer of 429 or 5xx: worth another attempt."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_unreachable(inner) for inner in exc.exceptions)
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    if isinstance(exc, httpx2.TransportError):
        return True
    if isinstance(exc, AuthError):
        return exc.kind == "unreachable"
    return exc.__cause__ is not None and _unreachable(exc.__cause__)


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first `kind` in `exc`, its groups and its causes."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _find(inner, kind)) is not None:
                return found
    return _find(exc.__cause__, kind) if exc.__cause__ is not None else None


def _refused(exc: BaseException) -> bool:
    """Whether the server answered the handshake with an error, and nothing else went wrong."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_refused(inner) for inner in exc.exceptions)
    return isinstance(exc, MCPError) and exc.code not in _LOCAL_ERRORS


def _really_cancelled() -> bool:
    """Whether the current task was asked to stop, as opposed to a stray CancelledError.

    A transport whose task group dies can leak `CancelledError` into a waiting call without anyone
    cancelling the caller; then asyncio's `cancelling()` count is zero.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return True
    return task is None or task.cancelling() > 0
