"""The allowlist proxy's edges (DESIGN 19), in-process against servers on 127.0.0.1: the exact
request a host gets, what is logged of each request target, the answers to malformed, huge or
refused requests, and how tunnels end (idle, half-closed, reset, or with the proxy)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from runner.workspace import Connection, NetworkProxy, ProxyLimits, parse_rule
from runner.workspace.sandbox.proxy import testonly_resolve as resolve_from_env
from tests.workspace.sandbox.test_proxy import AUTH, SECRET, Upstream, _ask, _events, _until

pytestmark = pytest.mark.anyio
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    found = Upstream()
    async with _host(found.serve) as port:
        found.port = port
        yield found


@contextlib.asynccontextmanager
async def _host(handler: Handler) -> AsyncIterator[int]:
    """A server on 127.0.0.1 that runs `handler` per connection: its port."""
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


def _proxy(port: int, rules: list[str], **limits: float) -> NetworkProxy:
    return NetworkProxy(
        [parse_rule(rule) for rule in rules],
        SECRET,
        limits=ProxyLimits(**limits),  # type: ignore[arg-type]
        resolve={("host.test", 80): ("127.0.0.1", port), ("host.test", 443): ("127.0.0.1", port)},
    )


def _refusal(answer: bytes, status: str) -> str:
    """The body of a well-formed refusal whose status line ends with `status`."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == f"HTTP/1.1 {status}", answer
    assert "Content-Type: text/plain; charset=utf-8" in lines and "Connection: close" in lines
    assert f"Content-Length: {len(body)}" in lines
    challenge = 'Proxy-Authenticate: Basic realm="agent-runner"'
    assert (challenge in lines) == status.startswith("407"), lines
    return body.decode()


async def _tunnel(
    proxy: NetworkProxy, target: str = "host.test:80"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    assert proxy.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(f"CONNECT {target} HTTP/1.1\r\n{AUTH}\r\n\r\n".encode())
    assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection established\r\n\r\n"
    return reader, writer


async def test_the_host_gets_the_request_in_origin_form_with_one_connection_header(
    upstream: Upstream,
) -> None:
    proxy = NetworkProxy(
        [parse_rule("allowed.test")],
        SECRET,
        resolve={("allowed.test", 80): ("127.0.0.1", upstream.port)},
    )
    auth = AUTH.replace("Proxy-Authorization: Basic", "proxy-authorization: basic")
    sent = (
        "GET http://allowed.test HTTP/1.1\r\nHost: allowed.test\r\nProxy-Connection: keep-alive\r\n"
        f"Connection: keep-alive\r\nKeep-Alive: 300\r\n{auth}\r\nAccept: */*\r\n\r\n"
    )
    async with proxy:
        await proxy.start(None, tcp=True)
        answer = await _ask(proxy, sent)
    assert answer.endswith(b"HELLO")
    expected = b"GET / HTTP/1.1\r\nHost: allowed.test\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    assert upstream.heads == [expected]


async def test_the_test_resolver_reads_its_pairs_from_the_environment(
    upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs = f"Allowed.Test:80=127.0.0.1:{upstream.port} broken:x=127.0.0.1:1 other:80=nowhere"
    monkeypatch.setenv("AGENT_RUNNER_TEST_RESOLVE", pairs)
    assert resolve_from_env() == {("allowed.test", 80): ("127.0.0.1", upstream.port)}
    async with NetworkProxy([parse_rule("allowed.test")], SECRET) as proxy:
        await proxy.start(None, tcp=True)
        answer = await _ask(proxy, f"GET http://allowed.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n")
    assert answer.endswith(b"HELLO")


async def test_what_is_logged_of_each_request_target(upstream: Upstream) -> None:
    long_name = ".".join(["a" * 63] * 4)[:253]
    targets = [
        "CONNECT [2001:db8::1]:8443",
        "CONNECT [2001:db8::1]",
        "CONNECT 2001:db8::1",
        "CONNECT name.test",
        "CONNECT name.test.:10443",
        "GET http://user:pw@name.test:8080/x",
        f"CONNECT {long_name}:443",
    ]
    async with _proxy(upstream.port, ["allowed.test"]) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        for target in targets:
            answer = await _ask(proxy, f"{target} HTTP/1.1\r\n{AUTH}\r\n\r\n")
            assert "is not in the task's network allowlist" in _refusal(answer, "403 Forbidden")
    assert [(e.host, e.port, e.method) for e in events] == [
        ("2001:db8::1", 8443, "CONNECT"),
        ("2001:db8::1", 443, "CONNECT"),
        ("2001:db8::1", 443, "CONNECT"),
        ("name.test", 443, "CONNECT"),
        ("name.test", 10443, "CONNECT"),
        ("name.test", 8080, "GET"),
        (long_name, 443, "CONNECT"),
    ]
    assert not upstream.heads and proxy.refused == len(targets) and proxy.allowed == 0


async def test_a_malformed_request_gets_a_400_that_says_why(upstream: Upstream) -> None:
    requests = [
        "GET /path HTTP/1.1",
        "GET http://allowed.test/ FTP/1.0",
        "GET http://allowed.test/",
        "CONNECT allowed.test:abc HTTP/1.1",
        "CONNECT allowed.test:123456 HTTP/1.1",
        "CONNECT :443 HTTP/1.1",
        f"CONNECT {'a' * 254}:443 HTTP/1.1",
    ]
    async with _proxy(upstream.port, ["allowed.test"]) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        bodies = [
            _refusal(await _ask(proxy, f"{r}\r\n{AUTH}\r\n\r\n"), "400 Bad Request")
            for r in requests
        ]
    assert bodies[0] == "send an absolute http:// URL or CONNECT\n"
    assert (events[1].host, events[1].port, events[1].rule) == ("", 0, None)
    assert bodies[1] == "not an HTTP request\n" and "bad port in 'allowed.test:abc'" in bodies[3]
    assert [(e.reason, e.method, e.allowed) for e in events] == [
        ("not a proxy request", "GET", False),
        ("not an HTTP request", "?", False),
        ("not an HTTP request", "?", False),
        ("bad port", "CONNECT", False),
        ("bad port", "CONNECT", False),
        ("bad host", "CONNECT", False),
        ("bad host", "CONNECT", False),
    ]
    assert not upstream.heads


async def test_a_refusal_names_at_most_twenty_rules(upstream: Upstream) -> None:
    rules = [f"h{n}.test" for n in range(1, 22)]
    async with _proxy(upstream.port, rules[:20]) as twenty, _proxy(upstream.port, rules) as more:
        for proxy in (twenty, more):
            await proxy.start(None, tcp=True)
        request = f"CONNECT elsewhere.test:443 HTTP/1.1\r\n{AUTH}\r\n\r\n"
        all_named = _refusal(await _ask(twenty, request), "403 Forbidden")
        cut = _refusal(await _ask(more, request), "403 Forbidden")
    assert f"(sandbox.network: {', '.join(rules[:20])}; a rule" in all_named
    assert f"(sandbox.network: {', '.join(rules[:20])} and 1 more; a rule" in cut
    assert "h21.test" not in cut


async def test_refusals_for_credentials_size_time_and_an_unreachable_host_are_well_formed(
    tmp_path: Path,
) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    proxy = _proxy(port, ["host.test"], max_head_bytes=1000, head_timeout_s=0.3)
    async with proxy:
        events = _events(proxy)
        await proxy.start(tmp_path / "p.sock", tcp=True)
        no_auth = await _ask(proxy, "GET http://host.test/ HTTP/1.1\r\n\r\n")
        slow = await _ask(proxy, "GET http://host.test/ HTTP/1.1\r\n")
        unreachable = await _ask(proxy, f"GET http://host.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n")
        big = "GET http://host.test/ HTTP/1.1\r\nX: " + "a" * 3000
        big_tcp = await _ask(proxy, big)
        reader, writer = await asyncio.open_unix_connection(str(tmp_path / "p.sock"))
        writer.write(big.encode())
        big_unix = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        await asyncio.wait_for(_until(lambda: len(events) == 5), 10)
    assert _refusal(no_auth, "407 Proxy Authentication Required")
    assert _refusal(slow, "408 Request Timeout") == "request head too slow\n"
    body = _refusal(unreachable, "502 Bad Gateway")
    assert body == "agent-runner: cannot reach host.test:80 (ConnectionRefusedError)\n"
    for answer in (big_tcp, big_unix):
        _refusal(answer, "431 Request Header Fields Too Large")
    assert [(e.reason, e.method) for e in events] == [
        ("no proxy credentials", "GET"),
        ("request head too slow", "?"),
        ("cannot reach host.test:80", "GET"),
        ("request head too large", "?"),
        ("request head too large", "?"),
    ]


async def test_the_connection_limit_counts_only_open_connections(upstream: Upstream) -> None:
    async with _proxy(upstream.port, ["host.test"], max_connections=2) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        assert proxy.port is not None
        began = time.monotonic()
        answers = [
            await _ask(proxy, f"GET http://host.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n") for _ in range(4)
        ]
        span = time.monotonic() - began
        idle = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(2)]
        await asyncio.wait_for(_until(lambda: len(proxy._open) == 2), 10)
        third = await _ask(proxy, f"GET http://host.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n")
        later = []
        for reader, writer in idle:  # the two open ones were let in
            writer.write(f"GET http://host.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n".encode())
            later.append(await asyncio.wait_for(reader.read(), 10))
            writer.close()
    assert all(answer.endswith(b"HELLO") for answer in answers + later)
    assert _refusal(third, "503 Service Unavailable") == "too many connections at once\n"
    assert proxy.allowed == 6 and len(upstream.heads) == 6
    assert all(0 <= e.duration_s <= span for e in events[:4])


async def test_two_proxies_listen_at_once_on_ports_of_their_own(upstream: Upstream) -> None:
    async with _proxy(upstream.port, ["host.test"]) as one, _proxy(upstream.port, []) as two:
        await one.start(None, tcp=True)
        await two.start(None, tcp=True)
        assert one.port != two.port
        request = f"GET http://host.test/ HTTP/1.1\r\n{AUTH}\r\n\r\n"
        assert (await _ask(one, request)).endswith(b"HELLO")
        assert (await _ask(two, request)).startswith(b"HTTP/1.1 403")
    for proxy in (one, two):  # the context's end closed them
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", proxy.port)


async def test_a_half_closed_upload_reaches_the_host_and_every_byte_is_counted() -> None:
    async def sink(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got = await reader.read()  # to the end: the proxy must pass the client's half-close on
        writer.write(f"GOT {len(got)}\n".encode() + b"x" * 300_000)
        await writer.drain()
        writer.close()

    async with _host(sink) as port, _proxy(port, ["host.test"]) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        reader, writer = await _tunnel(proxy)
        writer.write(b"y" * 200_000)
        writer.write_eof()
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        await asyncio.wait_for(_until(lambda: bool(events)), 10)
    assert answer == b"GOT 200000\n" + b"x" * 300_000
    [event] = events
    assert (event.allowed, event.reason, event.bytes_up) == (True, "", 200_000)
    assert event.bytes_down == len(answer)


async def test_an_idle_tunnel_is_closed_at_both_ends() -> None:
    ended = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the proxy closes its side
        ended.set()
        writer.close()

    async with _host(silent) as port, _proxy(port, ["host.test"], idle_timeout_s=0.3) as proxy:
        events = _events(proxy)
        await proxy.start(None, tcp=True)
        reader, writer = await _tunnel(proxy)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        await asyncio.wait_for(ended.wait(), 10)
        await asyncio.wait_for(_until(lambda: bool(events)), 10)
    assert (events[0].allowed, events[0].reason) == (True, "")


async def test_closing_the_proxy_ends_its_tunnels_and_stops_listening(tmp_path: Path) -> None:
    ended = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        ended.set()
        writer.close()

    async with _host(silent) as port:
        proxy = _proxy(port, ["host.test"])
        events = _events(proxy)
        await proxy.start(tmp_path / "p.sock", tcp=True)
        assert proxy.port is not None
        reader, writer = await _tunnel(proxy)
        await proxy.close()
        # Every connection is over, and told to the listener, when close returns.
        assert [(e.host, e.reason) for e in events] == [("host.test", "ended with the task")]
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        await asyncio.wait_for(ended.wait(), 10)
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", proxy.port)
        with pytest.raises(OSError):
            await asyncio.open_unix_connection(str(tmp_path / "p.sock"))


async def test_a_host_that_resets_the_tunnel_is_logged_as_a_failed_connection() -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # with no linger: a reset, not an end

    async with _host(reset) as port, _proxy(port, ["host.test"]) as proxy:
        events: list[Connection] = _events(proxy)
        await proxy.start(None, tcp=True)
        reader, writer = await _tunnel(proxy)
        writer.write(b"hello")
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        await asyncio.wait_for(_until(lambda: bool(events)), 10)
    assert (events[0].allowed, events[0].reason) == (False, "connection failed: OSError")


async def test_a_name_whose_address_is_loopback_in_ipv6_form_is_refused(
    upstream: Upstream,
) -> None:
    """A DNS answer `::ffff:127.0.0.1` is the host's own loopback, reached over IPv6."""

    async def answer(host: str, port: int, **_: object) -> list[tuple[object, ...]]:
        assert host == "rebound.test"
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::ffff:127.0.0.1", port, 0, 0))]

    rule = parse_rule(f"rebound.test:{upstream.port}")
    async with NetworkProxy([rule], SECRET, resolve={}) as proxy:
        loop = asyncio.get_running_loop()
        loop.getaddrinfo = answer  # type: ignore[assignment,method-assign]  # the resolver
        try:
            await proxy.start(None, tcp=True)
            request = f"GET http://rebound.test:{upstream.port}/ HTTP/1.1\r\n{AUTH}\r\n\r\n"
            refused = await _ask(proxy, request)
        finally:
            del loop.getaddrinfo
    assert "cannot reach rebound.test" in _refusal(refused, "502 Bad Gateway")
    assert not upstream.heads


async def test_a_name_whose_address_is_off_the_host_is_connected_to() -> None:
    """Local answers are passed over for the first one that is not; here that is the host's
    own outward address, on a port reserved and not listening: refused there, not here."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet: only picks the outward address
        except OSError:
            pytest.skip("no outward address here")
        own = probe.getsockname()[0]
    with socket.socket() as reserved:
        reserved.bind((own, 0))
        port = reserved.getsockname()[1]

        async def answer(host: str, port_: int, **_: object) -> list[tuple[object, ...]]:
            loopback = (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port_))
            return [loopback, (socket.AF_INET, socket.SOCK_STREAM, 6, "", (own, port_))]

        async with NetworkProxy([parse_rule(f"far.test:{port}")], SECRET, resolve={}) as proxy:
            loop = asyncio.get_running_loop()
            loop.getaddrinfo = answer  # type: ignore[assignment,method-assign]  # the resolver
            try:
                await proxy.start(None, tcp=True)
                request = f"GET http://far.test:{port}/ HTTP/1.1\r\n{AUTH}\r\n\r\n"
                refused = await _ask(proxy, request)
            finally:
                del loop.getaddrinfo
    body = _refusal(refused, "502 Bad Gateway")
    assert body == f"agent-runner: cannot reach far.test:{port} (ConnectionRefusedError)\n"


async def test_a_client_that_stops_reading_holds_the_host_back() -> None:
    """The proxy reads from the host only as fast as the client takes the bytes: it never
    holds more than the sockets' buffers."""
    wrote_all = asyncio.Event()

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        chunk = b"z" * (1 << 20)
        with contextlib.suppress(OSError):
            for _ in range(64):
                writer.write(chunk)
                await writer.drain()
            wrote_all.set()
        writer.close()

    async with _host(flood) as port, _proxy(port, ["host.test"]) as proxy:
        await proxy.start(None, tcp=True)
        _reader, writer = await _tunnel(proxy)  # and then never read
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wrote_all.wait(), 3)
        assert not wrote_all.is_set()
        writer.close()


async def test_a_tunnel_in_use_outlasts_its_idle_limit() -> None:
    """The idle limit counts from the last byte, not from the start: a slow exchange that is
    never quiet for long goes on. Each gap is a thirtieth of the limit: only a stall of the
    whole test process for nearly the limit (3 s) could close the tunnel early."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(100):
            writer.write(data)
            await writer.drain()
        writer.close()

    async with _host(echo) as port, _proxy(port, ["host.test"], idle_timeout_s=3.0) as proxy:
        await proxy.start(None, tcp=True)
        reader, writer = await _tunnel(proxy)
        for _ in range(45):  # 4.5 s at least, past the limit, in steps of 0.1 s
            writer.write(b".")
            assert await asyncio.wait_for(reader.read(100), 10) == b"."
            await asyncio.sleep(0.1)
        writer.close()
