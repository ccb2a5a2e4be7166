"""The way from a sandboxed command to the allowlist proxy, and nowhere else (DESIGN 19).

- bubblewrap: the command keeps its own network namespace (`--unshare-net`); the proxy's unix
  socket, in the task's private folder that is bound in, is the only path out. `forwarder.py`
  listens on 127.0.0.1:`INSIDE_PORT` in the namespace and relays to that socket.
- Landlock (ABI 4 and up): TCP bind is denied and TCP connect allowed only to the proxy's port
  (`--proxy-port`; Landlock's network rules know ports, not addresses).
- no backend (`auto`): the variables alone; programs that honour them are filtered, no other.

Commands, checks and hooks get `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and lower case) at the
proxy with the task's secret, and `NO_PROXY` for loopback (inside a namespace, a command's own
servers), less any loopback host a rule names: an allowlisted `127.0.0.1:8080` must go through
the proxy, since nothing else reaches it from inside (`no_proxy_for`). Unconfined commands get
them through `unconfined_env` (a context variable, set by the run for the task).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "INSIDE_PORT",
    "NetPath",
    "interpreter_dirs",
    "no_proxy_for",
    "proxied",
    "unconfined_env",
]

INSIDE_PORT = 3128
"""The forwarder's port inside a bubblewrap network namespace (nothing else listens there)."""
_FORWARDER = Path(__file__).with_name("forwarder.py")
_NO_PROXY = ("localhost", "127.0.0.1", "::1")
_PYTHON = os.path.realpath(sys.executable)
"""The forwarder's interpreter, symlinks (a virtual environment's) resolved."""


def no_proxy_for(hosts: tuple[str, ...]) -> str:
    """`NO_PROXY` for a task whose rules name `hosts` (lower case, no brackets, no port): the
    loopback names no rule names. Clients match `NO_PROXY` by host alone, so a rule for one
    port of 127.0.0.1 takes 127.0.0.1 out whole (a command's own server there then goes
    through the proxy too, and is refused unless a rule allows it)."""
    named = {host.lower() for host in hosts}
    return ",".join(name for name in _NO_PROXY if name not in named)


def interpreter_dirs() -> tuple[Path, ...]:
    """What the forwarder's Python needs readable inside the sandbox (it may live in the hidden
    HOME, as pyenv's does, or under the masked /tmp), the forwarder's own folder included."""
    return (Path(sys.base_prefix).resolve(), Path(_PYTHON).parent, _FORWARDER.parent.resolve())


@dataclass(frozen=True)
class NetPath:
    """Where a task's commands find its proxy."""

    socket: Path | None
    """The proxy's unix socket, inside the task's private folder (bubblewrap)."""
    port: int = 0
    """The proxy's TCP port on 127.0.0.1 (Landlock, no backend); 0 when it has none."""
    secret: str = ""
    """The credential the proxy asks of every request."""
    no_proxy: str = ",".join(_NO_PROXY)
    """`NO_PROXY`: the hosts clients reach directly (`no_proxy_for`)."""

    def env(self, port: int) -> dict[str, str]:
        """The proxy variables for a proxy on 127.0.0.1:`port`."""
        url = f"http://agent-runner:{self.secret}@127.0.0.1:{port}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        found = {name: url for name in names} | {name.lower(): url for name in names}
        return found | {"NO_PROXY": self.no_proxy, "no_proxy": self.no_proxy}

    def bwrap_command(self, command: list[str], filter_fd: int | None = None) -> list[str]:
        """`command`, started by the forwarder inside the namespace; it loads the seccomp
        filter on pipe `filter_fd` (no unix sockets) before the exec, not before the relay."""
        script = [_PYTHON, "-I", "-S", str(_FORWARDER)]
        script += [] if filter_fd is None else ["--seccomp-fd", str(filter_fd)]
        return [*script, str(self.socket), str(INSIDE_PORT), "--", *command]

    def landlock_options(self) -> list[str]:
        """The Landlock script's options: TCP connect to the proxy's port only."""
        return ["--proxy-port", str(self.port)]

    def as_json(self) -> dict[str, object]:
        """For `Sandbox.to_json`."""
        socket = str(self.socket) if self.socket else None
        data: dict[str, object] = {"socket": socket, "port": self.port, "secret": self.secret}
        return data | {"no_proxy": self.no_proxy}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> NetPath:
        """What `as_json` wrote; KeyError or ValueError when it is not that."""
        socket = Path(str(data["socket"])) if data["socket"] else None
        no_proxy = str(data.get("no_proxy", ",".join(_NO_PROXY)))
        return cls(socket, int(str(data["port"])), str(data["secret"]), no_proxy)


_UNCONFINED: ContextVar[Mapping[str, str] | None] = ContextVar("agent_runner_proxy", default=None)


def unconfined_env() -> Mapping[str, str]:
    """The proxy variables for commands that run with no sandbox ({} without an allowlist)."""
    return _UNCONFINED.get() or {}


@contextlib.contextmanager
def proxied(env: Mapping[str, str] | None) -> Iterator[None]:
    """Give unconfined commands started in the body the proxy variables `env`."""
    token = _UNCONFINED.set(env)
    try:
        yield
    finally:
        _UNCONFINED.reset(token)
