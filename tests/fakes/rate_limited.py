"""A fake model server that takes a few requests at a time and answers the rest with 429.

`RateLimitedServer` is `tests.fakes.model_server.FakeModelServer` (same wire formats, same steps)
with a concurrency limit in front, as a proxy such as LiteLLM's `max_parallel_requests` has: a
request that arrives while `max_concurrent` are being answered gets a 429 with `retry-after`
at once. Every request is recorded with its arrival time and, for a 429, the time it was sent
(`time.monotonic()`, the clock the runner's event loop uses too), so a test can put the requests
in order around a 429 without timing anything.

The reply comes from `script(body)` (stateless, so concurrent tasks each follow their own
conversation), after `latency_s`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.model_server import (
    FakeModelServer,
    Step,
    _Handler,
    _State,
)

__all__ = ["Arrival", "RateLimitedServer"]


@dataclass(frozen=True)
class Arrival:
    """One request as the server saw it."""

    t: float
    """`time.monotonic()` at arrival."""
    task: str
    """The first user message's first line (which task sent it)."""
    limited: bool
    """Answered with a 429."""
    sent_429_at: float | None = None
    """`time.monotonic()` once the 429 was written."""


@dataclass
class _LimitState(_State):
    max_concurrent: int = 8
    retry_after: str = "1"
    latency_s: float = 0.0
    burst: int = 0
    in_flight: int = 0
    arrivals: list[Arrival] = field(default_factory=list)
    gathered: threading.Condition = field(default_factory=threading.Condition)


class _LimitHandler(_Handler):
    def do_POST(self) -> None:
        arrived = time.monotonic()
        state = self.server.state
        assert isinstance(state, _LimitState)
        body = self._read_body()
        with state.lock:
            state.in_flight += 1
            limited = state.in_flight > state.max_concurrent
            index = len(state.arrivals)
            state.arrivals.append(Arrival(arrived, _task_of(body), limited))
        ended = threading.Event()

        def end() -> None:
            if not ended.is_set():
                ended.set()
                with state.lock:
                    state.in_flight -= 1

        try:
            self._gather(state, index)
            if limited:
                self._limited(state, index)
                return
            if state.latency_s:
                time.sleep(state.latency_s)
            wfile = self.wfile
            # The request stops counting as the body's last chunk goes out, as a server that
            # frees its slot when the reply's generator ends does.
            self.wfile = _LastChunk(wfile, end)  # type: ignore[assignment]
            try:
                self._answer(body)
            finally:
                self.wfile = wfile
        finally:
            end()

    def _gather(self, state: _LimitState, index: int) -> None:
        """The first `burst` requests wait for each other (bounded), so that they overlap."""
        with state.gathered:
            state.gathered.notify_all()
            if index < state.burst:
                state.gathered.wait_for(lambda: len(state.arrivals) >= state.burst, 20.0)

    def _limited(self, state: _LimitState, index: int) -> None:
        error = {
            "error": {
                "message": "Too many requests at once; try again later.",
                "type": "rate_limit_error",
                "param": None,
                "code": None,
            }
        }
        self._json(429, error, {"retry-after": state.retry_after})
        with state.lock:
            arrival = state.arrivals[index]
            state.arrivals[index] = Arrival(
                arrival.t, arrival.task, arrival.limited, time.monotonic()
            )


class _LastChunk:
    """A writable that calls `before_end` just before the chunked body's terminator goes out."""

    def __init__(self, rest: Any, before_end: Callable[[], None]) -> None:
        self._rest = rest
        self._before_end = before_end

    def write(self, data: bytes) -> int:
        if data.endswith(b"0\r\n\r\n"):
            self._before_end()
        return int(self._rest.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rest, name)


def _task_of(body: Any) -> str:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content", "")).split("\n", 1)[0]
    return ""


class RateLimitedServer(FakeModelServer):
    """A FakeModelServer that answers at most `max_concurrent` requests at once."""

    def __init__(
        self,
        *,
        script: Callable[[Any], Step],
        max_concurrent: int,
        retry_after: str = "1",
        latency_s: float = 0.0,
        burst: int = 0,
    ) -> None:
        """`burst`: the first this many requests wait (up to 20 s) until all have arrived."""
        super().__init__()
        state = _LimitState(
            self._state.steps,
            None,
            script=script,
            max_concurrent=max_concurrent,
            retry_after=retry_after,
            latency_s=latency_s,
            burst=burst,
        )
        self._serve_with(state, _LimitHandler)

    @property
    def arrivals(self) -> list[Arrival]:
        """Every request so far, in order of arrival."""
        state = self._state
        assert isinstance(state, _LimitState)
        with state.lock:
            return list(state.arrivals)
