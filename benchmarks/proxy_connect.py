"""100 HTTPS-style round trips through the network allowlist's proxy against direct (DESIGN 19).

A round trip is what a client does for one HTTPS request on a fresh connection, without the TLS:
connect, (through the proxy: `CONNECT host:port` and its 200), send a request, read the answer
(16 KiB), close. The host is a threaded server on 127.0.0.1; the proxy (`NetworkProxy`, the one
each task gets) runs in its own thread and event loop, as it runs beside the runner's loop, and
the client is a plain blocking socket. Target: under 1.5x the direct time.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import socketserver
import threading
import time
from collections.abc import Callable

from benchmarks.figures import Bench, Row
from runner.workspace import NetworkProxy, parse_rule

__all__ = ["proxy_connect"]

ROUND_TRIPS = 100
_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 16384\r\n\r\n" + b"x" * 16384
_REQUEST = b"GET /simple/ HTTP/1.1\r\nHost: registry.test\r\n\r\n"
_SECRET = "bench-secret"
_AUTH = base64.b64encode(f"agent-runner:{_SECRET}".encode()).decode()


class _Host(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            data += chunk
        self.request.sendall(_ANSWER)


def _read_answer(conn: socket.socket) -> None:
    got = 0
    while got < len(_ANSWER):
        chunk = conn.recv(65536)
        if not chunk:
            raise OSError("the host closed early")
        got += len(chunk)


def _direct(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(_REQUEST)
        _read_answer(conn)


def _through(proxy_port: int, port: int) -> None:
    with socket.create_connection(("127.0.0.1", proxy_port)) as conn:
        head = f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nProxy-Authorization: Basic {_AUTH}\r\n\r\n"
        conn.sendall(head.encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += conn.recv(4096)
        if not reply.startswith(b"HTTP/1.1 200"):
            raise OSError(f"the proxy refused: {reply[:80]!r}")
        conn.sendall(_REQUEST)
        _read_answer(conn)


def _timed(trip: Callable[[], None]) -> float:
    started = time.perf_counter()
    for _ in range(ROUND_TRIPS):
        trip()
    return time.perf_counter() - started


def _proxy_thread(port: int) -> tuple[NetworkProxy, asyncio.AbstractEventLoop, threading.Thread]:
    loop = asyncio.new_event_loop()
    proxy = NetworkProxy([parse_rule(f"127.0.0.1:{port}")], _SECRET, resolve={})
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(proxy.start(None, tcp=True))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    return proxy, loop, thread


def proxy_connect(bench: Bench) -> list[Row]:
    """The row: median over the reps of 100 round trips through the proxy and direct."""
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    host = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Host)
    host.daemon_threads = True
    threading.Thread(target=host.serve_forever, daemon=True).start()
    port = int(host.server_address[1])
    proxy, loop, thread = _proxy_thread(port)
    assert proxy.port is not None
    proxy_port = proxy.port
    direct: list[float] = []
    through: list[float] = []
    try:
        _direct(port)
        _through(proxy_port, port)  # warm both paths
        for _ in range(bench.reps):
            direct.append(_timed(lambda: _direct(port)))
            through.append(_timed(lambda: _through(proxy_port, port)))
    finally:
        asyncio.run_coroutine_threadsafe(proxy.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        host.shutdown()
        host.server_close()
    bench.raw["proxy_connect"] = {"direct_s": direct, "proxy_s": through}
    runner, floor = sorted(through)[len(through) // 2], sorted(direct)[len(direct) // 2]
    return [
        Row(
            f"{ROUND_TRIPS} CONNECT round trips through the allowlist proxy (16 KiB answers)",
            runner,
            floor,
            "s",
            target="< 1.5x direct",
            holds=runner < 1.5 * floor,
            note=f"{proxy.allowed} connections allowed and logged by the proxy",
        )
    ]
