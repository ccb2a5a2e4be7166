"""A host rule means that host (DESIGN 24): a forwarded request goes out with `Host:` set to the
target the rule allowed, another `Host:` is refused; and the proxy's unix socket works whatever
the length of its folder's path (a long TMPDIR)."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runner.workspace import Connection, NetworkProxy, parse_rule
from runner.workspace.sandbox.proxy import unix_listener
from tests.workspace.sandbox.test_proxy import AUTH, SECRET, Upstream

pytestmark = pytest.mark.anyio


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    found = Upstream()
    server = await asyncio.start_server(found.serve, "127.0.0.1", 0)
    found.port = server.sockets[0].getsockname()[1]
    async with server:
        yield found


async def _ask(upstream: Upstream, rules: list[str], head: str) -> tuple[bytes, list[Connection]]:
    resolve = {("allowed.test", 80): ("127.0.0.1", upstream.port)}
    events: list[Connection] = []
    async with NetworkProxy([parse_rule(r) for r in rules], SECRET, resolve=resolve) as proxy:
        proxy.listener = events.append
        await proxy.start(None, tcp=True)
        assert proxy.port is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(f"{head}{AUTH}\r\n\r\n".encode())
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    return answer, events


@pytest.mark.parametrize(
    "host", ["other.test", "evil.example:80", "allowed.test:8080", "allowed.test.evil", "", "[::1"]
)
async def test_a_host_header_that_names_another_target_is_refused(
    upstream: Upstream, host: str
) -> None:
    head = f"GET http://allowed.test/x HTTP/1.1\r\nHost: {host}\r\n"
    answer, events = await _ask(upstream, ["allowed.test"], head)
    assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer
    assert b"the allowlist pins Host to the target" in answer
    assert not upstream.heads  # nothing reached the host
    [event] = events
    assert (event.host, event.allowed, event.reason) == (
        "allowed.test", False, "Host header differs from the target",
    )  # fmt: skip


@pytest.mark.parametrize("host", ["allowed.test", "ALLOWED.test.", "allowed.test:80", None])
async def test_a_request_goes_out_with_the_host_of_its_target(
    upstream: Upstream, host: str | None
) -> None:
    given = f"Host: {host}\r\n" if host is not None else ""
    head = f"GET http://allowed.test/x HTTP/1.1\r\n{given}Accept: */*\r\n"
    answer, _ = await _ask(upstream, ["allowed.test"], head)
    assert answer.endswith(b"HELLO"), answer
    [sent] = upstream.heads
    lines = sent.decode().split("\r\n")
    assert lines[:2] == ["GET /x HTTP/1.1", "Host: allowed.test"]
    assert [line for line in lines if line.lower().startswith("host:")] == ["Host: allowed.test"]


async def test_two_host_headers_are_refused(upstream: Upstream) -> None:
    head = "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nhost: other.test\r\n"
    answer, events = await _ask(upstream, ["allowed.test"], head)
    assert answer.startswith(b"HTTP/1.1 400") and b"send one Host header" in answer
    assert not upstream.heads and events[0].reason == "more than one Host header"


async def test_an_ip_literal_target_takes_its_own_address_as_host(upstream: Upstream) -> None:
    rule = f"127.0.0.1:{upstream.port}"
    target = f"http://127.0.0.1:{upstream.port}/simple/"
    answer, _ = await _ask(upstream, [rule], f"GET {target} HTTP/1.1\r\nHost: {rule}\r\n")
    assert answer.endswith(b"HELLO")
    refused, _ = await _ask(
        upstream, [rule], f"GET {target} HTTP/1.1\r\nHost: localhost:{upstream.port}\r\n"
    )
    assert refused.startswith(b"HTTP/1.1 403") and len(upstream.heads) == 1


def test_a_socket_in_a_folder_of_any_length_is_bound_private_and_reached_by_its_folder() -> None:
    with tempfile.TemporaryDirectory(prefix="ar-long-") as folder:
        deep = Path(folder) / ("t" * 120) / ("m" * 80)  # a TMPDIR of 200 characters and more
        deep.mkdir(parents=True)
        path = deep / "proxy.sock"
        assert len(str(path)) > 200
        with unix_listener(path) as listener:
            assert path.is_socket() and path.stat().st_mode & 0o777 == 0o600
            # The relay's way in: a name relative to the folder (forwarder.py).
            child = os.fork()
            if child == 0:
                try:
                    os.chdir(deep)
                    with socket.socket(socket.AF_UNIX) as client:
                        client.connect("proxy.sock")
                        client.sendall(b"hi")
                finally:
                    os._exit(0)
            conn, _ = listener.accept()
            with conn:
                assert conn.recv(2) == b"hi"
            os.waitpid(child, 0)
        short = Path(folder) / "p.sock"
        with unix_listener(short):
            assert short.stat().st_mode & 0o777 == 0o600


async def test_the_proxy_listens_on_a_socket_under_a_long_folder() -> None:
    with tempfile.TemporaryDirectory(prefix="ar-long-") as folder:
        deep = Path(folder) / ("x" * 150) / ("y" * 60)
        deep.mkdir(parents=True)
        async with NetworkProxy([parse_rule("allowed.test")], SECRET) as proxy:
            await proxy.start(deep / "proxy.sock", tcp=False)
            cwd = os.getcwd()
            os.chdir(deep)
            try:
                reader, writer = await asyncio.open_unix_connection("proxy.sock")
            finally:
                os.chdir(cwd)
            writer.write(f"CONNECT evil.test:443 HTTP/1.1\r\n{AUTH}\r\n\r\n".encode())
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
    assert answer.startswith(b"HTTP/1.1 403")
