"""A task's network allowlist (DESIGN 19): its rules, its proxy, how the sandbox uses it.

`allowlist` is the task's `sandbox.network` list plus `--allow-host`; `check_network` names a
bad host of the config file or the command line before anything runs (a task file's own are
checked when it is loaded). `task_proxy` starts the proxy for one task, outside the sandbox,
listening where the backend's commands can reach it, and stops it when the task ends.
`NetworkSink` writes each connection to the session log as a `network` event once the log is
open (the ones before wait), up to `MAX_LOGGED`; more are counted, not logged.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.errors import ConfigError, RunnerError, SandboxUnavailable
from runner.outcome import SandboxRecord
from runner.sessionlog import LogWriteError, SessionLogWriter
from runner.settings import SandboxSettings, Settings
from runner.workspace import (
    Connection,
    NetPath,
    NetworkProxy,
    Sandbox,
    interpreter_dirs,
    landlock_abi,
    no_proxy_for,
    parse_rule,
    proxied,
    rule_problems,
)

__all__ = [
    "MAX_LOGGED",
    "NetworkSink",
    "TaskProxy",
    "allowlist",
    "check_network",
    "connection_fields",
    "log_network",
    "task_proxy",
    "unheld_allowlist",
    "with_allowlist",
]

MAX_LOGGED = 1000
"""`network` events one session log holds; the rest are counted in the reports only."""


def allowlist(spec: SandboxSettings, settings: Settings) -> tuple[str, ...] | None:
    """The hosts a task's commands may reach; None when the network is simply on or off."""
    if spec.network is True:
        return None
    own = spec.network if isinstance(spec.network, tuple) else ()
    hosts = tuple(dict.fromkeys((*own, *settings.allow_hosts)))
    return hosts or None


def check_network(settings: Settings) -> None:
    """Raise ConfigError naming each bad host of `--allow-host` and the config's
    `sandbox.network`, with the config file's line."""
    lines = []
    for host in settings.allow_hosts:
        with contextlib.suppress(ValueError):
            parse_rule(host)
            continue
        lines.append(f"--allow-host {host!r}: {rule_problems([host])[0][1]}")
    network = settings.sandbox.network
    if isinstance(network, tuple):
        where = settings.where("sandbox", "network")  # the list's line (entries have none)
        for index, message in rule_problems(network):
            entry = f"[{index}]" if index >= 0 else ""
            lines.append(f"{where}: sandbox.network{entry}: {message}")
    if lines:
        raise ConfigError("\n".join(lines))


@dataclass
class NetworkSink:
    """Where a task's `network` events go: the session log once it is open."""

    write: Callable[[Connection], None] | None = None
    waiting: list[Connection] = field(default_factory=list)
    logged: int = 0
    warn: Callable[[str], None] | None = None

    def __call__(self, connection: Connection) -> None:
        if self.write is None:
            # One more than the log holds, so that opening the log still warns of the rest.
            if len(self.waiting) <= MAX_LOGGED:
                self.waiting.append(connection)
            return
        self.logged += 1
        if self.logged <= MAX_LOGGED:
            self.write(connection)
        elif self.logged == MAX_LOGGED + 1 and self.warn is not None:
            self.warn(f"more than {MAX_LOGGED} network connections: the rest are counted only")

    def open(self, write: Callable[[Connection], None], warn: Callable[[str], None]) -> None:
        """Write the connections so far, and every later one, with `write`."""
        self.write, self.warn = write, warn
        waiting, self.waiting = self.waiting, []
        for connection in waiting:
            self(connection)


@dataclass(frozen=True)
class TaskProxy:
    """A running proxy and the way to it."""

    proxy: NetworkProxy
    path: NetPath
    sink: NetworkSink

    def counts(self) -> tuple[int, int]:
        """Connections allowed and refused so far."""
        return self.proxy.allowed, self.proxy.refused

    def env(self) -> dict[str, str]:
        """The proxy variables of a command on the host's network (Landlock, no backend)."""
        return self.path.env(self.path.port)


@contextlib.asynccontextmanager
async def task_proxy(hosts: tuple[str, ...], socket: Path | None) -> AsyncIterator[TaskProxy]:
    """The proxy of one task: on the unix socket `socket` (in the task's private folder, for a
    bubblewrap namespace), else on a TCP port of 127.0.0.1 (commands on the host's network)."""
    secret = secrets.token_urlsafe(18)
    sink = NetworkSink()
    rules = [parse_rule(host) for host in hosts]
    proxy = NetworkProxy(rules, secret)
    proxy.listener = sink
    direct = no_proxy_for(tuple(rule.host for rule in rules))
    async with proxy:
        await proxy.start(socket, tcp=socket is None)
        yield TaskProxy(proxy, NetPath(socket, proxy.port or 0, secret, direct), sink)


@contextlib.asynccontextmanager
async def with_allowlist(
    hosts: tuple[str, ...] | None, record: SandboxRecord, sandbox: Sandbox | None, required: bool
) -> AsyncIterator[tuple[SandboxRecord, Sandbox | None, TaskProxy | None, RunnerError | None]]:
    """The record, the sandbox and the proxy of a task with an allowlist `hosts` (unchanged,
    and no proxy, without one). Where nothing enforces the list, commands get the proxy
    variables all the same; `required` then makes it an error instead."""
    if hosts is None:
        yield record, sandbox, None, None
        return
    # Only bubblewrap's namespace leaves the proxy as the one way out. Landlock's rules know
    # ports, not addresses: "connect to the proxy's port" reaches any host on that port.
    enforced = sandbox is not None and sandbox.backend == "bwrap"
    record = replace(record, network=False, allowlist=hosts, allowlist_enforced=enforced)
    unnamed = "net-allowlist" not in record.missing  # else `task_sandbox` named it
    if not enforced and unnamed and record.status in ("enforced", "degraded"):
        record = replace(record, missing=(*record.missing, "net-allowlist"))
        if sandbox is not None:
            why = f"net-allowlist: {unheld_allowlist()}"
            record = replace(record, reason="; ".join(filter(None, (record.reason, why))))
    if sandbox is not None and not enforced and required:
        error = SandboxUnavailable(
            f"sandbox mode is required, but the network allowlist cannot be enforced here "
            f"({unheld_allowlist()}); install bubblewrap (with user namespaces), or use mode auto"
        )
        yield record, sandbox, None, error
        return
    socket = sandbox.scratch / "proxy.sock" if sandbox and sandbox.backend == "bwrap" else None
    async with task_proxy(hosts, socket) as proxy:
        if sandbox is not None:
            readable = (*sandbox.readable, *interpreter_dirs()) if socket else sandbox.readable
            sandbox = replace(sandbox, network=False, proxy=proxy.path, readable=readable)
        with proxied(proxy.env() if sandbox is None else None):
            yield record, sandbox, proxy, None


def unheld_allowlist() -> str:
    """Why Landlock does not hold a host list, on this kernel."""
    if landlock_abi() >= 4:
        return (
            "Landlock limits TCP connect by port, not by address: a command can connect to "
            "any host on the proxy's port"
        )
    return "this kernel's Landlock has no network rules (ABI 4): any TCP connect goes out"


def log_network(
    proxy: TaskProxy | None,
    log: SessionLogWriter,
    turn: Callable[[], int],
    say: Callable[[str], None],
) -> None:
    """Write the proxy's connections to `log` from now on (those so far first); a connection
    that ends after the log's end line (the proxy closing) is counted, not written."""
    if proxy is None:
        return

    def write(connection: Connection) -> None:
        if not log.ended:
            with contextlib.suppress(LogWriteError):
                log.network(turn=turn(), **connection_fields(connection))

    def warn(message: str) -> None:
        say(message)
        if not log.ended:
            with contextlib.suppress(LogWriteError):
                log.warning(message)

    proxy.sink.open(write, warn)


def connection_fields(connection: Connection) -> dict[str, Any]:
    """A connection as the `network` event's fields."""
    return {
        "host": connection.host[:253],
        "port": connection.port,
        "allowed": connection.allowed,
        "method": connection.method,
        "rule": connection.rule,
        "reason": connection.reason or None,
        "bytes_up": connection.bytes_up,
        "bytes_down": connection.bytes_down,
        "duration_s": connection.duration_s,
    }
