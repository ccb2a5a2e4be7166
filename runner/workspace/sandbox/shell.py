"""How the runner starts a shell command in a workdir: execute_command and hooks both come here.

One seam for every command a task runs on the machine (execute_command, hooks, the success
check), so that the task's sandbox (`backends.current()`) confines them all:
`/bin/sh -c COMMAND` in the root, with the given (minimal) environment, as the leader of its own
process group, which is killed whole when the command ends or times out. Confined, the leader is
the sandbox's `bwrap` (or the Landlock script, which execs the shell), with HOME and TMPDIR in the
task's private folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import anyio
from anyio.abc import ByteReceiveStream, Process

from runner.settings import environ
from runner.workspace.sandbox.backends import current
from runner.workspace.sandbox.netpath import unconfined_env
from runner.workspace.sandbox.seccomp import filter_pipe

__all__ = [
    "TRACE_ENV",
    "GroupWatcher",
    "ShellRun",
    "kill_group",
    "open_shell",
    "read_pipe",
    "run_shell",
    "run_to_end",
    "start_group",
    "start_uncancelled",
]

P = TypeVar("P")
"""A started process, of anyio's kind or asyncio's."""

TRACE_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("TRACE_ENV", default=None)
"""Variables every command started in this context gets on top of its environment: the trace
context (`TRACEPARENT`, `TRACESTATE`) of the span it runs under, set by
`runner.run.telemetry.tracing`."""

_DRAIN_AFTER_KILL_S = 2.0
"""How long the output pipes may stay open once the group is killed (a child that left it)."""
_DRAIN_S = 1.0
"""After a command ends (`run_to_end`: execute_command, the success check), how long its output
pipe may stay open before reading stops."""


class GroupWatcher(Protocol):
    """Told about each command's process group while it runs (`reaper.Reaper`)."""

    def watch(self, pgid: int) -> None: ...

    def forget(self, pgid: int) -> None: ...


async def open_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    watcher: GroupWatcher | None = None,
) -> Process:
    """Start `command` with the shell in `cwd`, as the leader of a new process group, and tell
    `watcher` (the reaper) about the group before anything can cancel the caller."""
    # anyio's shield holds back anyio's cancellations (a cancelled task group or scope) until
    # the watcher knows the group; asyncio's own (the time limit, SIGINT's task.cancel) go
    # through it, and `start_group` meets them.
    argv = ["/bin/sh", "-c", command]
    sandbox = current()
    confined = sandbox is not None
    network = sandbox is not None and sandbox.network
    with anyio.CancelScope(shield=True), _filter(confined, network) as filter_fd:
        if sandbox is not None:
            argv = sandbox.argv(argv, cwd, filter_fd)
            env = sandbox.env(env if env is not None else environ())
        elif proxy_env := unconfined_env():  # an allowlist no backend enforces (DESIGN 19)
            env = {**(env if env is not None else environ()), **proxy_env}
        process = await start_group(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd,
            env=_with_trace(env),
            pass_fds=() if filter_fd is None else (filter_fd,),
        )
        if watcher is not None:
            watcher.watch(process.pid)
    return process


async def start_group(argv: Sequence[str], **options: Any) -> Process:
    """`anyio.open_process(argv, start_new_session=True, **options)`, proof against a
    cancellation that lands while the process starts (`start_uncancelled`)."""
    return await start_uncancelled(
        anyio.open_process(argv, start_new_session=True, **options), _kill_and_reap
    )


async def start_uncancelled(start: Awaitable[P], discard: Callable[[P], Awaitable[None]]) -> P:
    """The process `start` makes (a new group's leader); a caller cancelled while it starts has
    `discard` kill the group and reap it before the cancellation goes on, so nothing outlives it.

    Why its own task: the process exists as soon as it is forked, and the start awaits the event
    loop after that. anyio's shield does not hold back asyncio's own cancellation (the
    `asyncio.timeout` of a task's time limit); landing in that await, it made asyncio kill the
    leader alone and wait for the output pipes to close, which the command's children held open
    to their end: a 2 s time limit waited 30 s for `sleep 30`, and nothing killed the group."""
    starting = asyncio.ensure_future(start)
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        await _to_the_end(_discard_started(starting, discard))
        raise


async def _discard_started(
    starting: asyncio.Future[P], discard: Callable[[P], Awaitable[None]]
) -> None:
    try:
        process = await starting
    except Exception:  # it could not start: nothing to kill; the caller is cancelled anyway
        return
    await discard(process)


async def _kill_and_reap(process: Process) -> None:
    kill_group(process.pid)
    await process.aclose()


async def _to_the_end(work: Awaitable[None]) -> None:
    """Await `work` to its end however often the caller is cancelled meanwhile (the time limit
    on top of SIGINT); the caller's cancellation is not lost, its own `except` re-raises it."""
    task = asyncio.ensure_future(work)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    task.result()


@contextlib.contextmanager
def _filter(confined: bool, network: bool) -> Iterator[int | None]:
    """The seccomp filter's pipe for a confined command (None unconfined, or where there is no
    filter for this machine: the probe then records `sockets` as not held); `network`: the
    task's network is on, so inet sockets of every kind are allowed."""
    if not confined:
        yield None
        return
    with filter_pipe(network) as fd:
        yield fd


def _with_trace(env: Mapping[str, str] | None) -> dict[str, str] | None:
    trace = TRACE_ENV.get()
    if not trace:
        return dict(env) if env is not None else None
    return {**(os.environ if env is None else env), **trace}


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid`; nothing happens when it is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_to_end(
    process: Process,
    read_output: Callable[[], Awaitable[None]],
    *,
    timeout_s: float,
    watcher: GroupWatcher | None,
) -> bool:
    """Let `process` (from `open_shell`) run while `read_output()` reads its pipes, for at most
    `timeout_s`; then kill its whole group, so that nothing it started outlives it, and reap it.
    True when it ran out of time. Its group is killed however this ends (a cancellation too)."""
    read_all = anyio.Event()

    async def reading() -> None:
        try:
            await read_output()
        finally:
            read_all.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(reading)
            with anyio.move_on_after(timeout_s) as scope:
                await process.wait()
            kill_group(process.pid)
            # What the group wrote before it died is still in the pipe. A process that left the
            # group (setsid) may hold the pipe open for ever: it gets a moment, no more.
            with anyio.move_on_after(_DRAIN_S):
                await read_all.wait()
            group.cancel_scope.cancel()
        return scope.cancelled_caught
    finally:
        kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()
        if watcher is not None:
            watcher.forget(process.pid)


async def read_pipe(stream: ByteReceiveStream | None, write: Callable[[bytes], object]) -> None:
    """Hand every chunk of `stream` to `write`, to its end (or until the pipe is closed)."""
    if stream is None:
        return
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            write(chunk)


@dataclass(frozen=True)
class ShellRun:
    """A finished command: what it printed and how it ended."""

    exit_code: int | None
    """Its exit status; negative for a signal; None when it timed out."""
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    truncated: bool = False
    """Output beyond the cap was read and dropped."""


async def run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    input_bytes: bytes,
    timeout_s: float,
    watcher: GroupWatcher | None = None,
    max_output_bytes: int = 64 * 1024,
) -> ShellRun:
    """Run `command` with `input_bytes` on its stdin; keep the first `max_output_bytes` of stdout
    and of stderr. At the end (or the timeout, or a cancellation) its whole group is killed."""
    started = time.monotonic()
    process = await open_shell(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        watcher=watcher,
    )
    out, err = _Capture(max_output_bytes), _Capture(max_output_bytes)
    timed_out = False
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_feed, process, input_bytes)
            group.start_soon(out.drain, process.stdout)
            group.start_soon(err.drain, process.stderr)
            with anyio.move_on_after(timeout_s) as scope:
                await process.wait()
            timed_out = scope.cancelled_caught
            kill_group(process.pid)
            with anyio.move_on_after(_DRAIN_AFTER_KILL_S):
                await out.done.wait()
                await err.done.wait()
            group.cancel_scope.cancel()
    finally:
        kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.wait()
        if watcher is not None:
            watcher.forget(process.pid)
    return ShellRun(
        exit_code=None if timed_out else process.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        duration_s=round(time.monotonic() - started, 4),
        truncated=out.dropped or err.dropped,
    )


async def _feed(process: Process, data: bytes) -> None:
    """Write the input and close stdin; a command that does not read it is fine."""
    stream = process.stdin
    if stream is None:
        return
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        if data:
            await stream.send(data)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.aclose()


class _Capture:
    """Reads a pipe to its end, keeping at most `cap` bytes."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.dropped = False
        self.done = anyio.Event()

    async def drain(self, stream: ByteReceiveStream | None) -> None:
        try:
            if stream is None:
                return
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                while True:
                    chunk = await stream.receive()
                    room = self.cap - self.kept
                    if len(chunk) > room:
                        self.dropped = True
                        chunk = chunk[: max(room, 0)]
                    if chunk:
                        self.chunks.append(chunk)
                        self.kept += len(chunk)
        finally:
            self.done.set()

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")
