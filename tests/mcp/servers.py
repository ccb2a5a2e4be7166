"""Start the HTTP test servers for hub tests: the SDK test server and npm's server-everything.

Both run as child processes bound to a free port on this machine and are always stopped by PID.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fakes.mcp_test_server import SCRIPT

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
EVERYTHING = NODE_DIR / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def require_everything() -> Path:
    """The server-everything entry point; skip (or fail on CI) when npm did not install it."""
    if not EVERYTHING.is_file():
        reason = "tests/node/node_modules is missing: run `npm ci --prefix tests/node`"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return EVERYTHING


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a server by its PID and reap it."""
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


@contextmanager
def sdk_http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The SDK test server over streamable HTTP: yields (endpoint URL, process)."""
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 20)
        line = process.stdout.readline().decode() if ready else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"test server did not announce its port: {line!r}")
        port = int(line.split()[1])
        _wait_for_port(port)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        stop(process)


@contextmanager
def everything_http_server(
    mode: str = "streamableHttp", path: str = "/mcp"
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """server-everything in streamableHttp mode (or `mode="sse", path="/sse"`, the older SSE
    transport): yields (endpoint URL, process)."""
    entry = require_everything()
    port = _free_port()
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen(
        ["node", str(entry), mode],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}{path}", process
    finally:
        stop(process)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after 20 s")
