"""A real `redis-server` (the OS package) for the fleet governor's tests, on a free TCP port of
127.0.0.1 or on a unix socket; started with no persistence, ready once it answers PING, stopped
by its PID. A missing redis-server fails the test that needs it: it never skips."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

__all__ = ["RedisServer", "free_port"]

START_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """One redis-server process; a context manager. `url` is what `--governor-url` takes."""

    def __init__(self, folder: Path, *, unix: bool = False) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None, "redis-server is not installed (apt-get install redis-server)"
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.socket_path = folder / "redis.sock" if unix else None
        self.port = 0 if unix else free_port()
        self._args = [
            binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ]
        if self.socket_path is not None:
            self._args += ["--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.socket_path is not None:
            return f"unix://{self.socket_path}"
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        log = (self.folder / "redis.log").open("wb")
        self.process = subprocess.Popen(
            self._args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.ping():
            assert self.process.poll() is None, (self.folder / "redis.log").read_text()
            assert time.monotonic() < deadline, "redis-server did not answer PING"
            time.sleep(0.02)
        return self

    def ping(self) -> bool:
        """Whether the server answers PING now (a raw RESP exchange: no client needed)."""
        try:
            if self.socket_path is not None:
                conn = socket.socket(socket.AF_UNIX)
                conn.settimeout(2)
                conn.connect(str(self.socket_path))
            else:
                conn = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            with conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """SIGKILL the server by its PID (no shutdown save) and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
