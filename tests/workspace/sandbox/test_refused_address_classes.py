"""Every address class the allowlist proxy refuses to reach through a name (DESIGN 19), one
instance each: a DNS answer can never aim the proxy at the host's own services or the cloud
metadata service, only an IP literal the operator wrote can.

The resolver (`getaddrinfo`) and the connect (`create_connection`) are the proxy's edges to the
network: both are replaced on the running loop, so a test sees which address the proxy dials
without any packet leaving the machine."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from runner.workspace import Connection, NetworkProxy, ProxyLimits, parse_rule
from tests.workspace.sandbox.test_proxy import AUTH, SECRET, _ask, _until

pytestmark = pytest.mark.anyio
PORT = 8443

REFUSED = {
    "loopback v4": "127.0.0.1",
    "loopback v4, the far end of 127/8": "127.255.255.254",
    "loopback v6": "::1",
    "loopback v4 mapped into v6": "::ffff:127.0.0.1",
    "link-local v4: the cloud metadata service": "169.254.169.254",
    "link-local v4, another": "169.254.0.1",
    "link-local v4 mapped into v6": "::ffff:169.254.169.254",
    "link-local v6": "fe80::1",
    "link-local v6 with a zone": "fe80::1%eth0",
    "unspecified v4": "0.0.0.0",
    "unspecified v6": "::",
    "unspecified v4 mapped into v6": "::ffff:0.0.0.0",
    "multicast v4": "224.0.0.1",
    "multicast v4, site-local SSDP": "239.255.255.250",
    "multicast v4 mapped into v6": "::ffff:224.0.0.251",
    "multicast v6": "ff02::1",
}
"""One instance of every class `proxy._local` refuses (a name's answer), mapped forms included."""
PUBLIC = "93.184.215.14"


@dataclass
class Network:
    """What the proxy asked of the network: the names it resolved and the addresses it dialed."""

    answers: dict[str, list[str]] = field(default_factory=dict)
    dialed: list[tuple[str, int]] = field(default_factory=list)
    silent: set[str] = field(default_factory=set)
    """Addresses whose connect never answers."""


def _info(address: str, port: int) -> tuple[Any, ...]:
    if ":" in address:
        return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))


@pytest.fixture
async def proxy_and_network() -> AsyncIterator[tuple[NetworkProxy, Network]]:
    """A proxy that allows `*.test`, `169.254.169.254:8443` (a literal) on PORT, whose names
    resolve as `network.answers` says and whose dials are recorded and refused."""
    network = Network()
    loop = asyncio.get_running_loop()
    real_connect = loop.create_connection
    rules = [parse_rule(f"*.test:{PORT}"), parse_rule(f"169.254.169.254:{PORT}")]
    limits = ProxyLimits(connect_timeout_s=0.5)
    async with NetworkProxy(rules, SECRET, limits=limits, resolve={}) as proxy:

        async def resolve(host: str, port: int, **_: object) -> list[tuple[Any, ...]]:
            return [_info(address, port) for address in network.answers[host]]

        async def connect(factory: Any, host: str, port: int, **kwargs: Any) -> Any:
            if (host, port) == ("127.0.0.1", proxy.port):  # the test's own client
                return await real_connect(factory, host, port, **kwargs)
            network.dialed.append((host, port))
            if host in network.silent:
                await asyncio.Event().wait()  # until the proxy's connect limit cancels it
            raise ConnectionRefusedError(111, "refused by the test's network")

        loop.getaddrinfo = resolve  # type: ignore[assignment,method-assign]
        loop.create_connection = connect  # type: ignore[assignment,method-assign]
        try:
            await proxy.start(None, tcp=True)
            yield proxy, network
        finally:
            del loop.getaddrinfo
            del loop.create_connection


async def _through(proxy: NetworkProxy, target: str) -> str:
    """The proxy's status line for a CONNECT to `target`."""
    answer = await _ask(proxy, f"CONNECT {target} HTTP/1.1\r\n{AUTH}\r\n\r\n")
    return answer.split(b"\r\n", 1)[0].decode()


@pytest.mark.parametrize("address", list(REFUSED.values()), ids=list(REFUSED))
async def test_a_name_that_resolves_only_to_a_refused_class_is_never_dialed(
    proxy_and_network: tuple[NetworkProxy, Network], address: str
) -> None:
    proxy, network = proxy_and_network
    network.answers["rebound.test"] = [address]
    assert await _through(proxy, f"rebound.test:{PORT}") == "HTTP/1.1 502 Bad Gateway"
    assert network.dialed == []


@pytest.mark.parametrize("address", list(REFUSED.values()), ids=list(REFUSED))
async def test_a_refused_answer_is_passed_over_for_the_next_public_one(
    proxy_and_network: tuple[NetworkProxy, Network], address: str
) -> None:
    proxy, network = proxy_and_network
    network.answers["mixed.test"] = [address, PUBLIC]
    await _through(proxy, f"mixed.test:{PORT}")
    assert network.dialed == [(PUBLIC, PORT)]


async def test_a_public_answer_and_a_literal_the_operator_allowed_are_dialed(
    proxy_and_network: tuple[NetworkProxy, Network],
) -> None:
    """The contrast: the refusal is about names' answers, not about every address."""
    proxy, network = proxy_and_network
    network.answers["public.test"] = [PUBLIC]
    await _through(proxy, f"public.test:{PORT}")
    await _through(proxy, f"169.254.169.254:{PORT}")  # written as a rule: the operator's choice
    assert network.dialed == [(PUBLIC, PORT), ("169.254.169.254", PORT)]


async def test_a_literal_no_rule_names_is_refused_before_any_dial(
    proxy_and_network: tuple[NetworkProxy, Network],
) -> None:
    proxy, network = proxy_and_network
    for literal in ("127.0.0.1", "[::1]", "169.254.169.253", "[fe80::1]"):
        assert await _through(proxy, f"{literal}:{PORT}") == "HTTP/1.1 403 Forbidden"
    assert network.dialed == []


def test_the_proxys_bounds_are_the_documented_ones() -> None:
    """docs/isolation.md's bounds: 64 connections, a 16 KiB head within 10 s, 10 s to resolve
    and connect, 120 s idle. A timeout ten times longer is a bound no one documented."""
    assert ProxyLimits() == ProxyLimits(
        max_connections=64,
        max_head_bytes=16 * 1024,
        head_timeout_s=10.0,
        connect_timeout_s=10.0,
        idle_timeout_s=120.0,
    )


@pytest.mark.parametrize("scheme", ["Bearer", "Digest", "Token", ""])
async def test_the_right_token_under_another_scheme_than_basic_is_refused(
    proxy_and_network: tuple[NetworkProxy, Network], scheme: str
) -> None:
    proxy, network = proxy_and_network
    network.answers["public.test"] = [PUBLIC]
    auth = AUTH.replace("Basic ", f"{scheme} " if scheme else "")
    request = f"CONNECT public.test:{PORT} HTTP/1.1\r\n{auth}\r\n\r\n"
    answer = await _ask(proxy, request)
    assert answer.startswith(b"HTTP/1.1 407 "), answer
    assert network.dialed == []


async def test_a_client_that_leaves_mid_head_is_a_failed_connection_event(
    proxy_and_network: tuple[NetworkProxy, Network],
) -> None:
    proxy, network = proxy_and_network
    events: list[Connection] = []
    proxy.listener = events.append
    assert proxy.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(f"CONNECT public.test:{PORT} HTTP/1.1\r\n".encode())  # no blank line: cut
    writer.write_eof()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    await asyncio.wait_for(_until(lambda: bool(events)), 10)  # recorded as the proxy's side ends
    (event,) = events
    assert (event.allowed, event.reason) == (False, "connection failed: IncompleteReadError")
    assert network.dialed == []


async def test_a_host_that_never_answers_is_a_502_at_the_connect_limit(
    proxy_and_network: tuple[NetworkProxy, Network],
) -> None:
    proxy, network = proxy_and_network
    events: list[Connection] = []
    proxy.listener = events.append
    network.answers["silent.test"] = [PUBLIC]
    network.silent.add(PUBLIC)
    assert await _through(proxy, f"silent.test:{PORT}") == "HTTP/1.1 502 Bad Gateway"
    await asyncio.wait_for(_until(lambda: bool(events)), 10)
    assert events[0].reason == f"cannot reach silent.test:{PORT}"
