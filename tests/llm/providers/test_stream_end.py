"""A reply is complete at its final event: the runner does not wait for the body's end.

A server that leaves Nagle's algorithm on sends the chunked terminator only after the client's
delayed ACK (40 ms). The fake server here withholds that terminator until the client's next
request arrives (bounded by `hold_timeout_s`): a provider that waited for it would send its next
request only once the bound ran out, which `hold_timeouts` counts. No wall time is asserted.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings

import pytest

from runner.llm.base import Message
from runner.llm.providers.anthropic import AnthropicMessages
from runner.llm.providers.openai import OpenAIChat
from runner.llm.providers.streaming import Drains, ack_promptly
from tests.fakes.model_server import FakeModelServer, reply
from tests.llm.conftest import SleepRecorder, make_settings

pytestmark = [
    pytest.mark.anyio,
    # The SDK warns about models nearing end of life; the names here are just test data.
    pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning"),
]

HELLO = [Message("user", "Say hello.")]


def _provider(wire: str, server: FakeModelServer) -> OpenAIChat | AnthropicMessages:
    if wire == "openai":
        return OpenAIChat("gpt-4.1", make_settings(server), sleep=SleepRecorder())
    return AnthropicMessages("claude-sonnet-4-5", make_settings(server), sleep=SleepRecorder())


def _drain_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if getattr(t.get_coro(), "__name__", "") == "_drain"]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_next_request_goes_out_while_the_body_end_is_withheld(
    server: FakeModelServer, wire: str
) -> None:
    server.push(reply("one", hold_end_until=2, hold_timeout_s=15.0), reply("two"))
    llm = _provider(wire, server)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = await llm.complete("s", HELLO)
        second = await llm.complete("s", HELLO)
        await llm.aclose()
        gc.collect()

    assert (first.text, second.text) == ("one", "two")
    assert first.retries == 0
    # The second request arrived while the first body's end was still withheld.
    assert server.hold_timeouts == 0
    assert _drain_tasks() == []  # the background drain is finished by aclose
    leaks = [w for w in caught if issubclass(w.category, (ResourceWarning, RuntimeWarning))]
    assert [str(w.message) for w in leaks] == []  # no unclosed response, no unawaited task


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_connection_is_kept_alive_when_the_body_ends_promptly(
    server: FakeModelServer, wire: str
) -> None:
    server.push(*(reply(f"turn {i}") for i in range(4)))
    llm = _provider(wire, server)
    # The OpenAI provider asks a compatible server for its context window, on connections of its
    # own: let that finish first, so that only the model calls' connections are counted.
    if isinstance(llm, OpenAIChat):
        await llm.context_window()
    before = server.connections_accepted

    for i in range(4):
        assert (await llm.complete("s", HELLO)).text == f"turn {i}"
        # The drain of the body's end runs beside the next turn; wait for it (bounded).
        await asyncio.wait_for(llm._drains.wait(), 10.0)
    await llm.aclose()

    assert len(server.requests) == 4
    assert server.connections_accepted == before + 1


class _NetworkStream:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def get_extra_info(self, info: str) -> object:
        return self._sock if info == "socket" else None


class _Response:
    def __init__(self, sock: socket.socket) -> None:
        self.extensions = {"network_stream": _NetworkStream(sock)}


@pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="TCP_QUICKACK is Linux only")
def test_ack_promptly_leaves_delayed_ack_mode_on_the_response_socket() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        peer, _ = listener.accept()
        with client, peer:
            # Request out, response in: the exchange that puts a connection in pingpong mode.
            client.sendall(b"request")
            peer.recv(16)
            peer.sendall(b"response")
            client.recv(16)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)

            ack_promptly(_Response(client))

            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1


def test_ack_promptly_ignores_a_response_without_a_socket() -> None:
    ack_promptly(object())  # a stand-in (or another transport) exposes none: nothing happens


class _Stream:
    """An SDK stream after its final event: the body's end is read already, or is still due."""

    def __init__(self, end: asyncio.Event | None = None) -> None:
        self._end = end
        self.closed = False

    async def __anext__(self) -> object:
        if self._end is not None:
            await self._end.wait()
        raise StopAsyncIteration

    async def close(self) -> None:
        self.closed = True


async def test_settle_lets_a_drain_whose_end_is_read_finish_before_the_next_request() -> None:
    # Without it, the drain of turn 1 has not run when turn 2's request takes a connection
    # (nothing awaits in between), so turn 2 opens a second one: on TLS, a second handshake.
    drains, end = Drains(), asyncio.Event()
    done, due = _Stream(), _Stream(end)
    drains.add(done)
    drains.add(due)
    await drains.settle()
    assert done.closed  # its connection is back in the pool
    assert not due.closed  # a body's end still on its way is not waited for
    end.set()
    await drains.wait()
    assert due.closed
