"""The forwarder (DESIGN 19): a sandboxed command's one way out, relaying its connections on
127.0.0.1 to the allowlist proxy's unix socket. Run as it is run, `python -I -S forwarder.py`:
on the host on a free port (its process group killed after, since no PID namespace ends its
relay), and under bubblewrap the way the runner starts it."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from runner.workspace import NetPath, Sandbox, confine, interpreter_dirs, probe, run_shell
from runner.workspace.sandbox.seccomp import program

FORWARDER = (
    Path(__file__).resolve().parents[3] / "runner" / "workspace" / "sandbox" / "forwarder.py"
)
PYTHON = os.path.realpath(sys.executable)
CLIENT = """
import socket, sys
port, mode = int(sys.argv[1]), sys.argv[2]

def read(conn):
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
    except TimeoutError:
        return b"(no end)"
    return data

if mode == "two":  # two connections at once; the second is answered while the first is open
    first = socket.create_connection(("127.0.0.1", port), timeout=20)
    second = socket.create_connection(("127.0.0.1", port), timeout=20)
    first.sendall(b"first")
    second.sendall(b"s" * 300000)
    second.shutdown(socket.SHUT_WR)
    print(read(second)[:12].decode())
    first.shutdown(socket.SHUT_WR)
    print(read(first).decode())
    sys.exit(3)
conn = socket.create_connection(("127.0.0.1", port), timeout=10)
if mode != "quiet":
    conn.sendall(b"hello")
print(repr(read(conn)))
"""


class _Counter(socketserver.BaseRequestHandler):
    """The proxy's stand-in: read to the end, answer how many bytes came and how they began."""

    def handle(self) -> None:
        data = b""
        while chunk := self.request.recv(65536):
            data += chunk
        self.request.sendall(f"GOT {len(data)} {data[:5].decode()}".encode())


class _Resetting(socketserver.BaseRequestHandler):
    """Closes with the client's bytes unread: a unix socket's peer then gets ECONNRESET. It
    closes here, not through socketserver's `shutdown_request`, whose SHUT_WR first lets the
    peer read a clean end instead, depending on which comes first (a race under load)."""

    def handle(self) -> None:
        self.request.recv(1, socket.MSG_PEEK)
        self.request.close()


@contextlib.contextmanager
def _proxy_socket(handler: type[socketserver.BaseRequestHandler]) -> Iterator[Path]:
    """A server on `proxy.sock` in a new folder `s` (as in a task's private folder)."""
    with tempfile.TemporaryDirectory(prefix="fw-") as folder:
        (Path(folder) / "s").mkdir()
        path = Path(folder) / "s" / "proxy.sock"
        server = socketserver.ThreadingUnixStreamServer(str(path), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield path
        finally:
            server.shutdown()
            server.server_close()


def _forward(args: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The forwarder on the host; its group (the relay child included) is killed after."""
    process = subprocess.Popen(
        [PYTHON, "-I", "-S", str(FORWARDER), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    try:
        out, err = process.communicate(timeout=60)  # the relay must not hold the pipes open
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _client(port: int, mode: str) -> list[str]:
    return ["--", PYTHON, "-I", "-S", "-c", CLIENT, str(port), mode]


def test_connections_are_relayed_both_ways_at_once_and_the_exit_code_is_the_commands(
    free_tcp_port: int,
) -> None:
    with _proxy_socket(_Counter) as path:
        done = _forward([str(path), str(free_tcp_port), *_client(free_tcp_port, "two")])
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["GOT 300000 s", "GOT 5 first"]


def test_a_connection_ends_at_once_when_the_proxy_cannot_be_reached(
    free_tcp_port: int, tmp_path: Path
) -> None:
    args = [str(tmp_path / "none.sock"), str(free_tcp_port)]
    done = _forward([*args, *_client(free_tcp_port, "quiet")])
    assert done.returncode == 0 and done.stdout == "b''\n", done


def test_a_proxy_that_resets_ends_the_commands_connection(free_tcp_port: int) -> None:
    with _proxy_socket(_Resetting) as path:
        done = _forward([str(path), str(free_tcp_port), *_client(free_tcp_port, "")])
    assert done.returncode == 0 and done.stdout == "b''\n", done


@pytest.mark.parametrize(
    "args",
    [
        ["s.sock", "3128", "--"],
        ["s.sock", "port", "--", "true"],
        ["s.sock", "3128", "-", "true"],
        ["--seccomp-fd"],
        ["--seccomp-fd", "x", "s.sock", "3128", "--", "true"],
    ],
)
def test_a_wrong_command_line_exits_125_with_the_usage(args: list[str]) -> None:
    done = _forward(args)
    assert done.returncode == 125 and done.stdout == ""
    assert done.stderr.startswith("usage: forwarder.py SOCKET PORT -- COMMAND ARGS..."), done


def test_a_port_it_cannot_listen_on_exits_125_without_running_the_command(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        done = _forward(["s.sock", port, "--", "touch", str(tmp_path / "ran")])
    assert done.returncode == 125 and not (tmp_path / "ran").exists()
    assert "agent-runner sandbox (network):" in done.stderr
    assert done.stderr.rstrip().endswith("; the command did not run"), done


def test_a_missing_command_exits_127_and_says_why(free_tcp_port: int) -> None:
    done = _forward(["s.sock", str(free_tcp_port), "--", "no-such-command-7f3a"])
    assert done.returncode == 127 and done.stdout == ""
    assert done.stderr.startswith("agent-runner sandbox (network): [Errno 2]"), done


def _forward_with_filter(
    data: bytes, port: int, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """The forwarder given `data` as its seccomp filter, to run `touch ran`."""
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    try:
        args = ["--seccomp-fd", str(read), "s.sock", str(port)]
        return _forward([*args, "--", "touch", str(tmp_path / "ran")], pass_fds=(read,))
    finally:
        os.close(read)


def test_a_broken_seccomp_filter_stops_the_command(free_tcp_port: int, tmp_path: Path) -> None:
    done = _forward_with_filter(b"12345", free_tcp_port, tmp_path)
    assert done.returncode == 127 and not (tmp_path / "ran").exists()
    assert "not a seccomp filter (5 bytes)" in done.stderr, done


def test_a_filter_the_kernel_refuses_stops_the_command(free_tcp_port: int, tmp_path: Path) -> None:
    no_such_opcode = b"\xff\xff\x00\x00\x00\x00\x00\x00"  # one instruction
    done = _forward_with_filter(no_such_opcode, free_tcp_port, tmp_path)
    assert done.returncode == 127 and not (tmp_path / "ran").exists()
    assert re.search(r"\[Errno [1-9][0-9]*\] seccomp", done.stderr), done


def test_under_bubblewrap_the_command_is_filtered_and_reaches_only_the_proxy() -> None:
    """As the runner starts it: `Sandbox.argv` with the seccomp pipe, HOME hidden (where the
    interpreter may live) and the interpreter's folders readable again."""
    found = probe("bwrap")
    if found.backend != "bwrap":
        pytest.skip(f"bwrap does not work here: {found.reason}")
    if program() is None:
        pytest.skip("no seccomp filter for this machine")
    script = (
        "import os, socket, urllib.parse\n"
        "try:\n"
        "    socket.socket(socket.AF_UNIX)\n"
        "    print('unix: allowed')\n"
        "except OSError as exc:\n"
        "    print('unix: refused', exc.errno)\n"
        "proxy = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])\n"
        "print(proxy.username, proxy.password, proxy.hostname)\n"
        "conn = socket.create_connection((proxy.hostname, proxy.port), timeout=20)\n"
        "conn.sendall(b'hello')\n"
        "conn.shutdown(socket.SHUT_WR)\n"
        "print(conn.recv(100).decode())\n"
        "conn.close()\n"
        "print(sorted(os.listdir('/proc/self/fd')))\n"
    )
    with _proxy_socket(_Counter) as path:
        base = path.parent.parent
        for name in ("w", "s/tmp"):
            (base / name).mkdir(parents=True)
        (base / "w" / "client.py").write_text(script, encoding="utf-8")
        sandbox = Sandbox(
            "bwrap",
            found.executable,
            base / "w",
            base / "s",
            hidden=(Path.home(),),
            readable=interpreter_dirs(),
            proxy=NetPath(path, 0, "tok3n"),
        )

        async def run() -> tuple[int | None, str]:
            with confine(sandbox):
                ran = await run_shell(
                    f"{PYTHON} -I -S client.py",
                    cwd=base / "w",
                    env={"PATH": os.defpath},
                    input_bytes=b"",
                    timeout_s=60,
                )
            return ran.exit_code, ran.stdout + ran.stderr

        code, out = anyio.run(run)
    assert code == 0, out
    assert out.splitlines() == [
        "unix: refused 13",
        "agent-runner tok3n 127.0.0.1",
        "GOT 5 hello",
        "['0', '1', '2', '3']",  # its stdio and the listing's own: no pipe left behind
    ]
