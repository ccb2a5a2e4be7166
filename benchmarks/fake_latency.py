"""The tests' fake model server, timed: arrival time, body size and RSS of a watched process.

`TimedServer` is `tests.fakes.model_server.FakeModelServer` with three additions the benchmark
needs and the tests do not: a fixed latency before each reply, a reply chosen from the request
itself (so concurrent tasks each get their own script), and a record per request. The fake
server itself is unchanged; this wraps its (private) handler and state. It also has a mode with
Nagle's algorithm left on (`reset(nagle=True)`), which the tests' server turns off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.model_server import (
    FakeModelServer,
    Step,
    _Handler,
    _State,
)

__all__ = ["Arrival", "TimedServer", "rss_kib"]

BACKLOG = 1024
"""The listen backlog: more than the widest burst of connections the benchmark makes."""


@dataclass(frozen=True)
class Arrival:
    """One request as the server saw it."""

    t: float
    """`time.perf_counter()` at arrival, in the benchmark's own process."""
    body_bytes: int
    """Size of the JSON body: the prompt bytes sent for this turn."""
    summary: bool
    """A compaction summary request rather than a turn of the loop."""
    rss_kib: int = 0
    """VmRSS of the watched process at arrival (0 when none is watched)."""
    hwm_kib: int = 0
    """VmHWM (peak RSS) of the watched process at arrival."""


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, from /proc; (0, 0) when it is gone."""
    values = {"VmRSS:": 0, "VmHWM:": 0}
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return 0, 0
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in values:
            values[parts[0]] = int(parts[1])
    return values["VmRSS:"], values["VmHWM:"]


def _is_summary(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    system = body.get("system")
    if system is None:  # OpenAI: the system prompt is the first message
        messages = body.get("messages") or [{}]
        system = messages[0].get("content", "") if isinstance(messages[0], dict) else ""
    return "You compress the history" in str(system)[:200]


@dataclass
class _TimedState(_State):
    latency_s: float = 0.0
    watch_pid: int | None = None
    arrivals: list[Arrival] = field(default_factory=list)


class _TimedHandler(_Handler):
    def do_POST(self) -> None:
        arrived = time.perf_counter()
        state = self.server.state
        assert isinstance(state, _TimedState)
        size = int(self.headers.get("content-length") or 0)
        body = self._read_body()
        rss, hwm = rss_kib(state.watch_pid) if state.watch_pid else (0, 0)
        with state.lock:
            state.arrivals.append(Arrival(arrived, size, _is_summary(body), rss, hwm))
        if state.latency_s:
            time.sleep(state.latency_s)
        self._answer(body)


class _NagleHandler(_TimedHandler):
    """The same handler with Nagle's algorithm left on, as `http.server`, cpp-httplib (llama.cpp's
    server) and many small proxies leave it: a small write waits for the ACK of the one before."""

    disable_nagle_algorithm = False


class TimedServer(FakeModelServer):
    """A FakeModelServer that records arrivals and can add latency and answer by script."""

    def __init__(
        self,
        *,
        script: Callable[[Any], Step] | None = None,
        default: Step | None = None,
        latency_s: float = 0.0,
    ) -> None:
        super().__init__(default=default)
        state = _TimedState(self._state.steps, default, script=script, latency_s=latency_s)
        self._serve_with(state, _TimedHandler)
        # `--jobs 128` opens 128 connections at once (and the runner's pool may open more): a
        # backlog that drops SYNs costs a second each (the kernel's retry).
        self._httpd.socket.listen(BACKLOG)

    @property
    def state(self) -> _TimedState:
        assert isinstance(self._state, _TimedState)
        return self._state

    def reset(
        self,
        *,
        script: Callable[[Any], Step] | None = None,
        latency_s: float | None = None,
        watch_pid: int | None = None,
        nagle: bool = False,
    ) -> None:
        """Start a new measurement: clear the arrivals, optionally change script/latency/watch.

        `nagle=True` serves the connections accepted from now on with Nagle's algorithm on.
        """
        self._httpd.RequestHandlerClass = _NagleHandler if nagle else _TimedHandler
        state = self.state
        with state.lock:
            state.arrivals = []
            if script is not None:
                state.script = script
            if latency_s is not None:
                state.latency_s = latency_s
            state.watch_pid = watch_pid

    def watch(self, pid: int | None) -> None:
        """Sample this process's RSS at every arrival."""
        self.state.watch_pid = pid

    @property
    def arrivals(self) -> list[Arrival]:
        with self.state.lock:
            return list(self.state.arrivals)
