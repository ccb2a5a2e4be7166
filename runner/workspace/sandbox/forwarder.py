"""Inside a bubblewrap network namespace, the one way out: `python -I -S forwarder.py SOCKET
PORT -- COMMAND ARGS...` (DESIGN 19).

The namespace has only a loopback interface. This script listens on 127.0.0.1:PORT there, forks
a child that relays each connection to the allowlist proxy's unix socket `SOCKET` (bound into
the sandbox; the proxy runs outside), and execs the command in its own place. The command's
proxy variables point at 127.0.0.1:PORT; a program that ignores them finds no route at all.
The child dies with the command (bubblewrap's PID namespace ends with its first process), and
is not dumpable: the command cannot read, trace or alter it (DESIGN 24). It reaches the socket
by a name relative to its folder, so a TMPDIR of any length works.

It runs by path with `-I -S`, like `landlock.py`: the standard library only. When it cannot
listen it exits 125 without running the command.
"""

from __future__ import annotations

import _socket  # the C module: the command waits for this script's imports, so keep them few
import os
import sys

__all__ = ["main"]

FAILED_EXIT = 125
_CHUNK = 65536


def _relay_forever(listener_fd: int, path: str) -> None:
    """The child: accept on the listener, relay each connection to the proxy's socket."""
    import contextlib
    import socket
    import threading

    def relay(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(_CHUNK):
                sink.sendall(chunk)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_RDWR)

    def serve(client: socket.socket) -> None:
        with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
            try:
                upstream.connect(path)
            except OSError:
                return
            back = threading.Thread(target=relay, args=(upstream, client), daemon=True)
            back.start()
            relay(client, upstream)
            back.join()

    # The socket's path may be longer than AF_UNIX allows (108 bytes, under a long TMPDIR):
    # connect by a name relative to its folder; this process alone changes folder.
    folder, _, name = path.rpartition("/")
    os.chdir(folder or "/")
    path = name
    listener = socket.socket(fileno=listener_fd)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client,), daemon=True).start()


def _undumpable() -> None:
    """PR_SET_DUMPABLE 0 for the relay: the command (its parent, same user, no capabilities)
    can no longer ptrace it, read its `/proc/PID/fd` or write its `/proc/PID/mem` (where the
    socket's path lies, which it would aim at another unix socket). It never execs, so the
    setting holds; the relay does not run without it."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise OSError(ctypes.get_errno(), "PR_SET_DUMPABLE")


def _load_filter(fd: int) -> None:
    """The seccomp filter the runner wrote to pipe `fd` (`seccomp.py`), for the command only;
    bubblewrap has set no_new_privs."""
    import ctypes

    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    code = b"".join(chunks)
    if not code or len(code) % 8:
        raise OSError(f"not a seccomp filter ({len(code)} bytes)")

    class Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(code, len(code))
    program = Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "seccomp")


def main(argv: list[str]) -> int:
    """Listen, fork the relay, load the filter, exec the command."""
    filter_fd = -1
    if argv[:1] == ["--seccomp-fd"] and len(argv) > 1 and argv[1].isdigit():
        filter_fd, argv = int(argv[1]), argv[2:]
    if len(argv) < 4 or argv[2] != "--" or not argv[1].isdigit():
        print("usage: forwarder.py SOCKET PORT -- COMMAND ARGS...", file=sys.stderr)
        return FAILED_EXIT
    path, port, command = argv[0], int(argv[1]), argv[3:]
    try:
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
    except OSError as exc:
        print(f"agent-runner sandbox (network): {exc}; the command did not run", file=sys.stderr)
        return FAILED_EXIT
    # The relay is the command's child (this process becomes the command): it dies with the
    # sandbox's PID namespace when the command, the namespace's first process, ends. A parent
    # may trace its child, so the relay makes itself undumpable before anything else.
    if os.fork() == 0:
        try:
            _undumpable()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # the command's pipes close when the command ends
                os.dup2(null, fd)
            if filter_fd >= 0:
                os.close(filter_fd)
            _relay_forever(listener.detach(), path)
        finally:
            os._exit(0)
    listener.close()
    try:
        if filter_fd >= 0:
            _load_filter(filter_fd)
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"agent-runner sandbox (network): {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
