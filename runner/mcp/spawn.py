"""Start the task's stdio servers before the MCP SDK is imported (issue 19, cold start).

Importing the SDK's client costs the runner about half a second of CPU, and a stdio server
(itself often a Python process importing the same SDK) needs as long again to answer its
handshake. Started first, the servers boot while the runner imports the SDK and the model's
client; the connection then speaks over the process it is handed (`stdio_transport(process=)`).

The process is started exactly as the SDK would start it: the same command and arguments, the
SDK's inherited variables overlaid with `server_env`, the task's working directory, a new
session (so the SDK's shutdown kills the whole tree), stderr through a pipe. Windows is left to
the SDK (it puts the server in a Job Object), and so is any server whose start fails here: the
connection then starts it itself and reports the failure in its usual words.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import Process

from runner.mcp.extension import WORKSPACE, ExtensionConfig
from runner.mcp.launch import builtin_workspace_root, server_env
from runner.settings import environ
from runner.workspace import SANDBOX_ENV, TRACE_ENV, kill_group, start_group
from runner.workspace import current as current_sandbox

__all__ = ["SDK_INHERITED_ENV", "discard", "spawn_early", "stdio_server_env"]

SDK_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""The variables the SDK's `get_default_environment()` passes on POSIX (a test compares)."""


def _sdk_default_env() -> dict[str, str]:
    """What the SDK's `get_default_environment()` returns, without importing the SDK."""
    env = environ()
    return {
        name: env[name]
        for name in SDK_INHERITED_ENV
        if name in env and not env[name].startswith("()")  # shell functions, as the SDK skips
    }


def _early(config: ExtensionConfig) -> bool:
    return (
        sys.platform != "win32"
        and config.type == "stdio"
        and config.cmd is not None
        and builtin_workspace_root(config) is None  # served in-process
    )


def stdio_server_env(config: ExtensionConfig, base_env: Mapping[str, str]) -> dict[str, str]:
    """What a stdio server gets beyond the SDK's default variables: a traced run's TRACEPARENT
    (of the task's span) under what the task sets, and for the workspace server its task's
    sandbox (its commands run confined as the in-process workspace's do). One function for the
    early spawn and the connection, so the two cannot drift apart."""
    env = {**(TRACE_ENV.get() or {}), **server_env(base_env, config.envs)}
    if config.name == WORKSPACE and (sandbox := current_sandbox()) is not None:
        env[SANDBOX_ENV] = sandbox.to_json()
    return env


async def spawn_early(
    configs: Sequence[ExtensionConfig], *, workdir: Path, base_env: Mapping[str, str]
) -> dict[str, Process]:
    """Start every stdio server of `configs` now: their processes by server name.

    A server that cannot be started here is left out (its connection starts it, and reports
    why not). Cancelled or failing half-way, the processes already started are killed.
    """
    started: dict[str, Process] = {}
    try:
        for config in configs:
            if not _early(config):
                continue
            assert config.cmd is not None
            try:
                # start_group: a cancellation landing mid-start kills the server's group.
                started[config.name] = await start_group(
                    [config.cmd, *config.args],
                    # As the SDK builds it when the connection starts the server itself.
                    env={**_sdk_default_env(), **stdio_server_env(config, base_env)},
                    stderr=subprocess.PIPE,
                    cwd=workdir,
                )
            except OSError:
                continue
    except BaseException:
        for process in started.values():
            await discard(process)
        raise
    return started


async def discard(process: Process) -> None:
    """Kill an early server nobody took (its process group) and reap it."""
    with anyio.CancelScope(shield=True):
        kill_group(process.pid)
        with contextlib.suppress(OSError):
            await process.aclose()
