"""Helpers the streaming providers share: idle timeouts per chunk, the drain of a finished
stream, usage estimates, and `Slots`: the requests in flight to one server, at most
`max_concurrency` at once (DESIGN 23: llama-cpp-python's server cuts a running stream when another
request arrives)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

from runner.llm.base import Message, Usage
from runner.llm.inflight import CHARS_PER_TOKEN
from runner.llm.providers.limiter import keep_slot
from runner.llm.retry import CallError

__all__ = [
    "CHARS_PER_TOKEN",
    "DRAIN_S",
    "Drains",
    "IDLE_SLACK",
    "IdleWatch",
    "Slot",
    "Slots",
    "ack_promptly",
    "estimate_tokens",
    "estimate_usage",
]
IDLE_SLACK = 0.01
"""How early (a share of the idle timeout) `IdleWatch` may call a stream idle: its deadline moves
only once it is at least this much out of date."""
DRAIN_S = 2.0
"""How long the rest of a finished stream may take to arrive before its connection is closed
instead of kept alive: a delayed ACK is 40-200 ms (Linux), up to 500 ms elsewhere."""


def ack_promptly(response: Any) -> None:
    """Have the client's kernel ACK this response's data at once instead of up to 40 ms later.

    On a kept-alive connection Linux delays the client's ACKs ("pingpong" mode: it hopes to send
    them with the next request). A server that leaves Nagle's algorithm on (`http.server`,
    cpp-httplib, many small proxies) holds each small write until the one before is ACKed, so
    the first event after the headers, and the body's end after the last event, each waited for
    the 40 ms delayed-ACK timer. TCP_QUICKACK, set once the headers are in, sends the pending
    ACK now and leaves pingpong mode for the rest of the response (the client sends nothing
    until the next request). Linux only; elsewhere, and for a socket the transport does not
    expose, nothing happens (`Drains` still spares the wait for the body's end).
    """
    option = getattr(socket, "TCP_QUICKACK", None)
    extensions = getattr(response, "extensions", None)
    stream = extensions.get("network_stream") if isinstance(extensions, dict) else None
    if option is None or stream is None:
        return
    # asyncio hands out a TransportSocket, which has setsockopt but is no socket.socket.
    sock = stream.get_extra_info("socket")
    if callable(getattr(sock, "setsockopt", None)):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1)


class SdkStream(Protocol):
    """What both SDKs' `AsyncStream` offer: the next event, and close."""

    def __anext__(self) -> Any: ...

    async def close(self) -> None: ...


class Drains:
    """Finished streams read to their end in the background, one task each.

    Once a stream's final event (and its usage) has arrived, the reply is complete, but the
    HTTP/1.1 body is not: the chunked terminator (and OpenAI's `data: [DONE]`) is still to come.
    A server that leaves Nagle's algorithm on holds that last small write until the client's
    delayed ACK, 40 ms later; waiting for it would stall every turn. The SDKs need the body read
    to its end to put the connection back in the pool, so a task does that here while the run
    goes on; a body that does not end within `DRAIN_S` has its connection closed. `wait()` (from
    the provider's `aclose`) leaves no task behind.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, stream: SdkStream) -> None:
        """Read the rest of `stream` in the background, then close it."""
        # The rate gate's slot stays taken until the server has sent all of it.
        task = asyncio.get_running_loop().create_task(_drain(stream, DRAIN_S, keep_slot()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Before a new request: give the drains under way one pass of the event loop.

        A body whose end has already arrived is then read, and its connection is back in the
        pool for the request to take. Otherwise the drain of the last reply has not run yet when
        the next request starts (the turn between them never awaits), and the request opens a
        second connection (`tests/llm/test_stream_end.py`)."""
        if self._tasks:
            await asyncio.sleep(0)

    async def wait(self) -> None:
        """Wait for every drain under way (each is bounded by `DRAIN_S`)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))


async def _drain(
    stream: SdkStream, limit_s: float, give_back: Callable[[], None] | None = None
) -> None:
    try:
        async with asyncio.timeout(limit_s):
            while await anext(stream, None) is not None:
                pass
    except Exception:  # the reply is complete; only the connection is lost
        pass
    finally:
        with contextlib.suppress(Exception):
            await stream.close()
        if give_back is not None:
            give_back()


class IdleWatch:
    """One deadline for a whole streamed call, pushed back each time something arrives.

    `async with IdleWatch(idle_s, what) as watch:` around the request and the reading of its
    stream, with `watch.alive()` after the response and after each chunk: more than `idle_s` of
    silence becomes a retryable `CallError`. One timer for the call, moved along, costs less than
    a timeout per chunk; and it is moved only once `IDLE_SLACK` of `idle_s` has passed since the
    last move (a move cancels one timer and schedules another, at every event of a stream whose
    events come microseconds apart), so a stream is called idle after between 99 % and 100 % of
    `idle_s` of silence.
    """

    def __init__(self, idle_s: float, what: str) -> None:
        self._idle_s = idle_s
        self._what = what
        self._answered = False
        self._timeout = asyncio.timeout(idle_s)
        self._now = asyncio.get_running_loop().time
        self._slack = idle_s * IDLE_SLACK
        self._moved = self._now()

    async def __aenter__(self) -> Self:
        await self._timeout.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._timeout.__aexit__(exc_type, exc, tb)
        except TimeoutError:
            if self._answered:
                raise CallError("idle", f"stream idle for {self._idle_s:g} s") from None
            raise CallError("idle", f"{self._what} sent nothing for {self._idle_s:g} s") from None

    @property
    def deadline(self) -> float | None:
        """When the silence runs out, in the event loop's clock."""
        return self._timeout.when()

    def alive(self) -> None:
        """Something arrived: the silence starts again from now."""
        self._answered = True
        now = self._now()
        if now - self._moved >= self._slack:
            self._moved = now
            self._timeout.reschedule(now + self._idle_s)


def estimate_tokens(text: str) -> int:
    """A rough token count for servers that report none (about four characters a token)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_usage(system: str, messages: Sequence[Message], reply: str) -> Usage:
    """Estimated usage of one call, flagged as estimated."""
    prompt = estimate_tokens(system) + sum(-(-m.chars // CHARS_PER_TOKEN) for m in messages)
    return Usage(input_tokens=prompt, output_tokens=estimate_tokens(reply), estimated=True)


@dataclass
class Slot:
    """One request in flight; `overlapped` once another request to the server ran beside it."""

    overlapped: bool = False


class Slots:
    """The requests in flight to one server (one model of one provider instance, which every
    task on the model shares), at most `limit` at once (None: no limit).

    A request that another one ran beside (`Slot.overlapped`) and that then ended with no finish
    reason was cut by the server, not by its size: llama-cpp-python ends the running stream when
    a new request arrives (its `interrupt_requests`, on by default). `serialize` lowers the
    limit to one request at a time from then on."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._active: list[Slot] = []
        self._freed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._freed is None or self._loop is not loop:
            self._freed, self._loop = asyncio.Condition(), loop
        return self._freed

    @contextlib.asynccontextmanager
    async def request(self) -> AsyncIterator[Slot]:
        """Hold a slot for one request (waiting for one while `limit` are in flight)."""
        freed = self._condition()
        async with freed:
            await freed.wait_for(lambda: self.limit is None or len(self._active) < self.limit)
            slot = Slot(overlapped=bool(self._active))
            for other in self._active:
                other.overlapped = True
            self._active.append(slot)
        try:
            yield slot
        finally:
            self._active.remove(slot)
            async with freed:
                freed.notify_all()

    def serialize(self) -> bool:
        """One request at a time from now on; False when that was already so."""
        if self.limit == 1:
            return False
        self.limit = 1
        return True
