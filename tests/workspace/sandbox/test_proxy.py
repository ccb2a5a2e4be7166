"""The allowlist proxy (DESIGN 19) in-process, against a server on 127.0.0.1: what it forwards,
what it refuses and why, and how it stays bounded when a client misbehaves."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runner.workspace import Connection, NetworkProxy, ProxyLimits, parse_rule

pytestmark = pytest.mark.anyio
SECRET = "s3cret-token"
AUTH = "Proxy-Authorization: Basic " + base64.b64encode(f"agent-runner:{SECRET}".encode()).decode()


class Upstream:
    """An HTTP server that answers HELLO and keeps the request heads it got."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nHELLO")
        await writer.drain()
        writer.close()


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    found = Upstream()
    server = await asyncio.start_server(found.serve, "127.0.0.1", 0)
    found.port = server.sockets[0].getsockname()[1]
    async with server:
        yield found


def _proxy(upstream: Upstream, rules: list[str], **limits: float) -> NetworkProxy:
    resolve = {("allowed.test", 80): ("127.0.0.1", upstream.port)}
    return NetworkProxy(
        [parse_rule(rule) for rule in rules],
        SECRET,
        limits=ProxyLimits(**limits),  # type: ignore[arg-type]
        resolve=resolve,
    )


async def _ask(proxy: NetworkProxy, request: str) -> bytes:
    assert proxy.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(request.encode())
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


def _events(proxy: NetworkProxy) -> list[Connection]:
    found: list[Connection] = []
    proxy.listener = found.append
    return found


async def test_a_forwarded_request_reaches_the_host_without_the_proxy_headers(
    upstream: Upstream,
) -> None:
    async with _proxy(upstream, ["allowed.test"]) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        target = "http://allowed.test/simple/x?y=1"
        answer = await _ask(proxy, f"GET {target} HTTP/1.1\r\nHost: allowed.test\r\n{AUTH}\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"HELLO")
    head = upstream.heads[0].decode()
    assert head.startswith("GET /simple/x?y=1 HTTP/1.1\r\n")
    assert "Proxy-Authorization" not in head and "Connection: close" in head
    [event] = events
    assert (event.host, event.port, event.allowed, event.method, event.rule) == (
        "allowed.test", 80, True, "GET", "allowed.test",
    )  # fmt: skip
    assert event.bytes_down == len(answer) and proxy.allowed == 1


async def test_a_connect_tunnel_through_the_unix_socket_carries_bytes_both_ways(
    upstream: Upstream, tmp_path: Path
) -> None:
    socket = tmp_path / "proxy.sock"
    async with _proxy(upstream, ["allowed.test:80"]) as proxy:
        events = _events(proxy)
        await proxy.start(socket, tcp=False)
        assert socket.stat().st_mode & 0o077 == 0
        reader, writer = await asyncio.open_unix_connection(str(socket))
        writer.write(f"CONNECT allowed.test:80 HTTP/1.1\r\n{AUTH}\r\n\r\n".encode())
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection established\r\n\r\n"
        writer.write(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        await asyncio.wait_for(_until(lambda: bool(events)), 10)
    assert answer.endswith(b"HELLO")
    [event] = events
    assert event.method == "CONNECT" and event.bytes_up > 0 and event.bytes_down == len(answer)


async def test_a_host_not_listed_gets_a_403_that_names_the_rules(upstream: Upstream) -> None:
    async with _proxy(upstream, ["allowed.test", "*.npmjs.org"]) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        answer = await _ask(proxy, f"CONNECT evil.example:443 HTTP/1.1\r\n{AUTH}\r\n\r\n")
        wrong_port = await _ask(proxy, f"CONNECT allowed.test:22 HTTP/1.1\r\n{AUTH}\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403 Forbidden")
    assert b"evil.example:443 is not in the task's network allowlist" in answer
    assert b"allowed.test, *.npmjs.org" in answer
    assert wrong_port.startswith(b"HTTP/1.1 403")
    assert [(e.host, e.port, e.allowed, e.reason) for e in events] == [
        ("evil.example", 443, False, "not in the allowlist"),
        ("allowed.test", 22, False, "not in the allowlist"),
    ]
    assert not upstream.heads and proxy.refused == 2


async def test_a_request_without_the_task_secret_is_refused(upstream: Upstream) -> None:
    wrong = "Proxy-Authorization: Basic " + base64.b64encode(b"agent-runner:guess").decode()
    async with _proxy(upstream, ["allowed.test"]) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        none = await _ask(proxy, "GET http://allowed.test/ HTTP/1.1\r\n\r\n")
        guessed = await _ask(proxy, f"GET http://allowed.test/ HTTP/1.1\r\n{wrong}\r\n\r\n")
    assert none.startswith(b"HTTP/1.1 407") and guessed.startswith(b"HTTP/1.1 407")
    assert [e.reason for e in events] == ["no proxy credentials"] * 2
    assert not upstream.heads


async def test_a_name_that_resolves_to_loopback_is_refused_unless_the_rule_is_the_ip(
    upstream: Upstream,
) -> None:
    rules = [f"localhost:{upstream.port}", f"127.0.0.1:{upstream.port}"]
    async with NetworkProxy([parse_rule(r) for r in rules], SECRET, resolve={}) as proxy:
        await proxy.start(None, tcp=True)
        tail = f":{upstream.port}/ HTTP/1.1\r\n{AUTH}\r\n\r\n"
        name = await _ask(proxy, f"GET http://localhost{tail}")
        ip = await _ask(proxy, f"GET http://127.0.0.1{tail}")
    assert name.startswith(b"HTTP/1.1 502") and b"cannot reach localhost" in name
    assert ip.endswith(b"HELLO")


async def test_a_huge_or_slow_request_head_is_answered_and_the_proxy_goes_on(
    upstream: Upstream,
) -> None:
    async with _proxy(upstream, ["allowed.test"], head_timeout_s=0.3) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        huge = await _ask(proxy, "GET http://allowed.test/ HTTP/1.1\r\nX: " + "a" * 100_000)
        slow = await _ask(proxy, "GET http://allowed.test/ HTTP/1.1\r\n")  # never finishes
        fine = await _ask(proxy, f"GET http://allowed.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n")
    assert huge.startswith(b"HTTP/1.1 431") and slow.startswith(b"HTTP/1.1 408")
    assert fine.endswith(b"HELLO")
    assert [e.reason for e in events][:2] == ["request head too large", "request head too slow"]


async def test_connections_beyond_the_limit_are_answered_503(upstream: Upstream) -> None:
    async with _proxy(upstream, ["allowed.test"], max_connections=2) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        assert proxy.port is not None
        idle = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(2)]
        await asyncio.wait_for(_until(lambda: len(proxy._open) == 2), 10)
        third = await _ask(proxy, f"GET http://allowed.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n")
        for _, writer in idle:
            writer.close()
    assert third.startswith(b"HTTP/1.1 503")
    assert "too many connections" in [e.reason for e in events]


async def _until(predicate: object) -> None:
    assert callable(predicate)
    while not predicate():
        await asyncio.sleep(0.01)
