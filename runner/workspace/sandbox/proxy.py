"""The allowlist proxy a task's commands reach the network through (DESIGN 19).

An HTTP forward proxy (`GET http://host/path`) and CONNECT tunnels (HTTPS, without TLS
interception), in the runner's event loop, outside the sandbox. It resolves names itself and
connects only to `host:port` pairs a rule allows (`hosts`); any other request is answered 403
with a body that names the rule, so the agent learns why. Every request, allowed or refused, is
a `Connection` handed to the listener (the session log's `network` event).

It listens on a unix socket in the task's private folder (the way in from a bubblewrap network
namespace) and, where commands share the host's network (Landlock, or no backend), on a TCP
port of 127.0.0.1. Either way a client must send the task's secret (`Proxy-Authorization`,
which the proxy variables carry as `http://agent-runner:SECRET@...`), so another local user
cannot use it as an open proxy. Bounded: concurrent connections, the request head's size and
the time it may take, and idle tunnels.

A name never resolves to a loopback, link-local or unspecified address unless the rule is that
IP literal (a DNS answer cannot aim the proxy at the host's own services). Tests map names to
loopback servers with `AGENT_RUNNER_TEST_RESOLVE` (`testonly_resolve`), which only the runner's
environment can set, never a task file.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import ipaddress
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.settings import environ
from runner.workspace.sandbox.hosts import HostRule, match_rule

__all__ = ["Connection", "NetworkProxy", "ProxyLimits", "testonly_resolve", "unix_listener"]

TEST_RESOLVE_ENV = "AGENT_RUNNER_TEST_RESOLVE"
_USER = "agent-runner"
_CHUNK = 65536


@dataclass(frozen=True)
class ProxyLimits:
    """What one task's proxy holds to."""

    max_connections: int = 64
    """Connections open at once; more are answered 503 at once."""
    max_head_bytes: int = 16384
    """The request line and headers together."""
    head_timeout_s: float = 10.0
    """Time for a client to send its request head."""
    connect_timeout_s: float = 10.0
    """Time to resolve a name and connect to it."""
    idle_timeout_s: float = 120.0
    """A connection with no byte either way for this long is closed."""


@dataclass(frozen=True)
class Connection:
    """One request the proxy answered: the session log's `network` event."""

    host: str
    port: int
    allowed: bool
    method: str
    """`CONNECT`, or the HTTP method of a forwarded request."""
    rule: str | None
    """The rule that allowed it, as written."""
    reason: str
    """Why it was refused, or how an allowed one failed ("" when it went through)."""
    bytes_up: int
    """Bytes from the command to the host (the request's body, a tunnel's upstream)."""
    bytes_down: int
    duration_s: float


class _Refused(Exception):
    def __init__(self, status: int, reason: str, body: str) -> None:
        super().__init__(reason)
        self.status, self.reason, self.body = status, reason, body


@dataclass
class _Request:
    method: str = ""
    host: str = ""
    port: int = 0
    rule: str | None = None
    up: int = 0
    down: int = 0


def testonly_resolve() -> dict[tuple[str, int], tuple[str, int]]:
    """`AGENT_RUNNER_TEST_RESOLVE` (tests only): `name:port=127.0.0.1:port` pairs, spaces
    between, that send a name the tests use to a loopback server."""
    mapping: dict[tuple[str, int], tuple[str, int]] = {}
    for pair in environ().get(TEST_RESOLVE_ENV, "")[:4096].split():
        name, _, target = pair.partition("=")
        host, _, port = name.rpartition(":")
        address, _, target_port = target.rpartition(":")
        if port.isdigit() and target_port.isdigit():
            mapping[(host.lower(), int(port))] = (address, int(target_port))
    return mapping


class NetworkProxy:
    """The proxy of one task; `start`, then `close` (an async context manager does both)."""

    def __init__(
        self,
        rules: Sequence[HostRule],
        secret: str,
        *,
        limits: ProxyLimits | None = None,
        resolve: Mapping[tuple[str, int], tuple[str, int]] | None = None,
    ) -> None:
        self.rules = tuple(rules)
        self.limits = limits or ProxyLimits()
        self.port: int | None = None
        """The TCP port on 127.0.0.1, when it listens on one."""
        self.allowed = 0
        self.refused = 0
        self.listener: Callable[[Connection], None] | None = None
        """Told about each connection as it ends (exceptions are the listener's to handle)."""
        self._token = base64.b64encode(f"{_USER}:{secret}".encode()).decode()
        self._resolve = dict(resolve if resolve is not None else testonly_resolve())
        self._servers: list[asyncio.Server] = []
        self._open: set[asyncio.Task[None]] = set()

    async def start(self, socket_path: Path | None, tcp: bool) -> None:
        """Listen on the unix socket `socket_path` and/or a free TCP port of 127.0.0.1."""
        limit = self.limits.max_head_bytes
        if socket_path is not None:
            listener = unix_listener(socket_path)
            server = await asyncio.start_unix_server(self._serve, sock=listener, limit=limit)
            self._servers.append(server)
        if tcp:
            server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=limit)
            self._servers.append(server)
            self.port = int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end every open connection."""
        for server in self._servers:
            server.close()
        open_tasks = list(self._open)
        for task in open_tasks:
            task.cancel()
        await asyncio.gather(*open_tasks, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()

    async def __aenter__(self) -> NetworkProxy:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._open.add(task)
        request = _Request()
        started = time.monotonic()
        reason = ""
        allowed = False
        try:
            if len(self._open) > self.limits.max_connections:
                raise _Refused(503, "too many connections", "too many connections at once")
            allowed, reason = await self._handle(reader, writer, request)
        except _Refused as refusal:
            reason = refusal.reason
            await _answer(writer, refusal.status, refusal.body)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            reason = reason or f"connection failed: {type(exc).__name__}"
        except asyncio.CancelledError:
            reason = "ended with the task"
        finally:
            self._open.discard(task)
            writer.close()
            duration = round(time.monotonic() - started, 3)
            self._record(Connection(
                request.host, request.port, allowed, request.method or "?", request.rule,
                reason, request.up, request.down, duration,
            ))  # fmt: skip

    def _record(self, connection: Connection) -> None:
        if connection.allowed:
            self.allowed += 1
        else:
            self.refused += 1
        if self.listener is not None:
            self.listener(connection)

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: _Request
    ) -> tuple[bool, str]:
        head = await self._head(reader)
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = _request_line(lines[0])
        request.method = method[:16]
        headers = lines[1:]
        if method == "CONNECT":
            request.host, request.port = _authority(target, 443)
        elif target.lower().startswith("http://"):
            request.host, request.port = _authority(target[7:].split("/", 1)[0], 80)
        else:
            raise _Refused(400, "not a proxy request", "send an absolute http:// URL or CONNECT")
        if not self._authorized(headers):
            raise _Refused(407, "no proxy credentials", "use the proxy variables as set")
        rule = match_rule(self.rules, request.host, request.port)
        if rule is None:
            raise _Refused(403, "not in the allowlist", self._refusal(request))
        request.rule = rule.text
        if method != "CONNECT":
            _check_host_header(headers, request)
        upstream_reader, upstream = await self._connect(request, rule)
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.write(_forwarded_head(method, target, version, headers))
            await _pipe(reader, writer, upstream_reader, upstream, request, self.limits)
        finally:
            upstream.close()
        return True, ""

    async def _head(self, reader: asyncio.StreamReader) -> bytes:
        try:
            return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.limits.head_timeout_s)
        except asyncio.LimitOverrunError:
            raise _Refused(431, "request head too large", "request head too large") from None
        except TimeoutError:
            raise _Refused(408, "request head too slow", "request head too slow") from None

    def _authorized(self, headers: list[str]) -> bool:
        for line in headers:
            name, _, value = line.partition(":")
            if name.strip().lower() == "proxy-authorization":
                scheme, _, token = value.strip().partition(" ")
                if scheme.lower() == "basic" and hmac.compare_digest(token.strip(), self._token):
                    return True
        return False

    def _refusal(self, request: _Request) -> str:
        listed = ", ".join(rule.text for rule in self.rules[:20])
        more = f" and {len(self.rules) - 20} more" if len(self.rules) > 20 else ""
        return (
            f"agent-runner: {request.host}:{request.port} is not in the task's network "
            f"allowlist (sandbox.network: {listed}{more}; a rule without a port allows 80 and "
            "443). The operator can add it to the task's sandbox.network or pass --allow-host."
        )

    async def _connect(
        self, request: _Request, rule: HostRule
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            async with asyncio.timeout(self.limits.connect_timeout_s):
                address, port = await self._address(request, rule)
                return await asyncio.open_connection(address, port, limit=_CHUNK)
        except (OSError, TimeoutError) as exc:
            what = f"cannot reach {request.host}:{request.port}"
            raise _Refused(502, what, f"agent-runner: {what} ({type(exc).__name__})") from None

    async def _address(self, request: _Request, rule: HostRule) -> tuple[str, int]:
        if (mapped := self._resolve.get((request.host.lower(), request.port))) is not None:
            return mapped
        if _is_ip(request.host):  # a literal needs no lookup (nor the thread pool's)
            return request.host, request.port
        infos = await asyncio.get_running_loop().getaddrinfo(
            request.host,
            request.port,
            type=1,  # SOCK_STREAM
        )
        literal = _is_ip(rule.host)
        for info in infos:
            address = str(info[4][0])
            if literal or not _local(address):
                return address, request.port
        raise OSError(f"{request.host} resolves only to local addresses")


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
    request: _Request,
    limits: ProxyLimits,
) -> None:
    """Copy bytes both ways until the host is done or the connection idles out."""
    last = [time.monotonic()]

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, up: bool) -> None:
        while chunk := await source.read(_CHUNK):
            last[0] = time.monotonic()
            if up:
                request.up += len(chunk)
            else:
                request.down += len(chunk)
            sink.write(chunk)
            await sink.drain()
        if up and sink.can_write_eof():
            with contextlib.suppress(OSError):
                sink.write_eof()

    async def idle() -> None:
        # One timer per connection, not one per read: a read under `wait_for` costs a task.
        while (left := limits.idle_timeout_s - (time.monotonic() - last[0])) > 0:
            await asyncio.sleep(left)

    upward = asyncio.ensure_future(copy(reader, upstream, True))
    downstream = asyncio.ensure_future(copy(upstream_reader, writer, False))
    watchdog = asyncio.ensure_future(idle())
    try:
        # The host's side ending ends the exchange; so does a connection idle too long.
        await asyncio.wait((downstream, watchdog), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (upward, downstream, watchdog):
            task.cancel()
        await asyncio.gather(upward, downstream, watchdog, return_exceptions=True)
    if downstream.done() and not downstream.cancelled() and downstream.exception() is not None:
        raise OSError("the host's side failed") from downstream.exception()


def _request_line(line: str) -> tuple[str, str, str]:
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _Refused(400, "not an HTTP request", "not an HTTP request")
    return parts[0].upper(), parts[1], parts[2]


def _authority(text: str, default: int) -> tuple[str, int]:
    text = text.rpartition("@")[2]
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:
        host, port = text, ""
    if port and (not port.isdigit() or len(port) > 5):
        raise _Refused(400, "bad port", f"bad port in {text[:100]!r}")
    if not host or len(host) > 253:
        raise _Refused(400, "bad host", "no host in the request")
    return host.rstrip("."), int(port) if port else default  # as sent: the log masks secrets


def _check_host_header(headers: list[str], request: _Request) -> None:
    """Refuse a forwarded request whose `Host:` names another host than the one the rule
    allowed (a server behind one address serving several names would answer for that one)."""
    values = [v for n, _, v in (h.partition(":") for h in headers) if n.strip().lower() == "host"]
    if len(values) > 1:
        raise _Refused(400, "more than one Host header", "send one Host header")
    try:
        host, port = _authority(values[0].strip(), 80) if values else (request.host, request.port)
    except _Refused:
        host, port = values[0], -1
    if (_normal(host), port) != (_normal(request.host), request.port):
        raise _Refused(
            403,
            "Host header differs from the target",
            f"agent-runner: the request is for {request.host}:{request.port} but its Host "
            f"header names {values[0].strip()[:100]!r}; the allowlist pins Host to the target",
        )


def _normal(host: str) -> str:
    host = host.lower().rstrip(".").strip("[]")
    return str(ipaddress.ip_address(host)) if _is_ip(host) else host


def _forwarded_head(method: str, target: str, version: str, headers: list[str]) -> bytes:
    """The request as the host gets it: origin-form, `Host:` the target's authority (as the
    URL wrote it; `_check_host_header` refused another), no proxy headers, one request only."""
    authority, slash, rest = target[7:].partition("/")
    path = "/" + rest if slash else "/"
    kept = [f"{method} {path} {version}", f"Host: {authority.rpartition('@')[2]}"]
    dropped = ("proxy-authorization", "proxy-connection", "connection", "keep-alive", "host")
    for line in headers:
        if line and line.partition(":")[0].strip().lower() not in dropped:
            kept.append(line)
    kept.append("Connection: close")
    return ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1")


async def _answer(writer: asyncio.StreamWriter, status: int, body: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 407: "Proxy Authentication Required"}
    reasons |= {408: "Request Timeout", 431: "Request Header Fields Too Large"}
    reasons |= {502: "Bad Gateway", 503: "Service Unavailable"}
    data = (body + "\n").encode()
    head = f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\n"
    head += "Content-Type: text/plain; charset=utf-8\r\n"
    head += f"Content-Length: {len(data)}\r\nConnection: close\r\n"
    if status == 407:
        head += 'Proxy-Authenticate: Basic realm="agent-runner"\r\n'
    with contextlib.suppress(OSError):
        writer.write(head.encode() + b"\r\n" + data)
        await asyncio.wait_for(writer.drain(), 5.0)


def unix_listener(path: Path) -> socket.socket:
    """A unix socket bound at `path`, mode 0600, whatever the length of `path`: AF_UNIX holds
    107 bytes, and a TMPDIR of CI's can be longer. A long path is bound through the folder's
    descriptor (`/proc/self/fd/N/NAME`), which names the same place in a few bytes."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if len(os.fsencode(path)) < 100:
            listener.bind(str(path))
        else:
            folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                listener.bind(f"/proc/self/fd/{folder}/{path.name}")
            finally:
                os.close(folder)
        path.chmod(0o600)
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _local(address: str) -> bool:
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # `::ffff:127.0.0.1` is 127.0.0.1, which is_loopback misses
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast
