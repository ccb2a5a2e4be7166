"""Kill the workspace's command process groups when the runner dies without cleaning up.

execute_command runs every command as the leader of its own process group, so that a timeout kills
its background children too. That same isolation means nothing kills those groups when the runner is
SIGKILLed (OOM killer, CI timeout): they are no longer in the runner's group and would outlive it.
A small helper process, the reaper, reads a pipe whose write end only the runner holds; the kernel
closes that end however the runner dies, and at EOF the reaper kills every group still registered
and removes the folders it was told of (the sandbox's private HOME and TMPDIR, full outputs). It
starts with an empty environment (no API key to find in its /proc/PID/environ) and makes itself
undumpable.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["Reaper", "shared_reaper"]

_log = logging.getLogger(__name__)

_SUPPORTED = hasattr(os, "killpg")
"""Windows has no process groups to kill: there watch() and forget() do nothing."""

_CLOSE_TIMEOUT = 2.0
"""How long close() waits for the reaper to kill what is left and exit before killing it."""

# Runs under `python -I -S` (no site-packages, no environment) so it starts in milliseconds.
# It ends only at EOF: SIGINT and SIGTERM meant for the runner must not end the safety net early.
# A malformed line is skipped rather than fatal, so that a crash never leaves groups unkilled.
# `+PGID`/`-PGID` watch and forget a process group, `DPATH`/`dPATH` a folder to remove at EOF.
# It makes itself undumpable first (PR_SET_DUMPABLE 0): a process of the same user (an
# unconfined command) can then neither ptrace it nor read its /proc/PID files.
_CODE = """\
import ctypes, os, shutil, signal, sys
try:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except (OSError, AttributeError):
    pass
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
groups, folders = set(), set()
for line in sys.stdin.buffer:
    kind, rest = line[:1], line[1:].rstrip(b"\\n")
    if kind == b"D":
        folders.add(rest)
    elif kind == b"d":
        folders.discard(rest)
    else:
        try:
            pgid = int(rest)
        except ValueError:
            continue
        if kind == b"+":
            groups.add(pgid)
        elif kind == b"-":
            groups.discard(pgid)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
for folder in folders:
    shutil.rmtree(folder, ignore_errors=True)
"""


_ENV = {"PATH": os.defpath}
"""The reaper's whole environment (DESIGN 18: the helpers get only what they need)."""


class Reaper:
    """Kill the watched process groups if the runner dies, or when close() is called.

    Thread-safe, since tool calls may run in worker threads. Trouble with the reaper process (it
    died, it cannot start) is logged once and never raised: losing the safety net must not fail a
    tool call. A reaper that died is replaced on the next write, and told the whole watched set.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._folders: set[str] = set()
        self._process: subprocess.Popen[bytes] | None = None
        self._warned = False

    @property
    def pid(self) -> int | None:
        """The reaper process's pid, or None while none runs (for tests and diagnostics)."""
        process = self._process
        return None if process is None else process.pid

    def watch(self, pgid: int) -> None:
        """Kill process group `pgid` if the runner dies before forget(pgid); starts the reaper."""
        if pgid <= 0:
            # killpg(0) would mean the reaper's own group: always a caller's bug.
            raise ValueError(f"not a process group id: {pgid}")
        if not _SUPPORTED:
            return
        with self._lock:
            self._groups.add(pgid)
            if self._process is None:
                self._start()
            else:
                self._send(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        """Stop watching `pgid`.

        Call it once the group is killed and its leader reaped; until then the pgid cannot be
        reused, and after it the reaper must not kill whoever gets that number next.
        """
        if not _SUPPORTED:
            return
        with self._lock:
            if pgid not in self._groups:
                return
            self._groups.discard(pgid)
            if self._process is not None:
                self._send(f"-{pgid}\n")

    def watch_folder(self, folder: Path) -> None:
        """Remove `folder` (and all it holds) if the runner dies before forget_folder(folder).

        For the temporary folders of full command outputs, which may hold secrets unmasked.
        """
        path = os.fsdecode(folder)
        if "\n" in path or not _SUPPORTED:
            return
        with self._lock:
            if path in self._folders:
                return
            self._folders.add(path)
            if self._process is None:
                self._start()
            else:
                self._send(f"D{path}\n")

    def forget_folder(self, folder: Path) -> None:
        """Stop watching `folder` (the runner removed it itself)."""
        path = os.fsdecode(folder)
        with self._lock:
            if path not in self._folders:
                return
            self._folders.discard(path)
            if self._process is not None:
                self._send(f"d{path}\n")

    def close(self) -> None:
        """Close the pipe: the reaper kills the groups still watched and exits. Idempotent.

        A later watch() starts a new reaper.
        """
        with self._lock:
            process, self._process = self._process, None
            self._groups.clear()
            self._folders.clear()
        if process is not None:
            _stop(process)

    def _start(self) -> None:
        """Start a reaper and tell it every watched group. Called with the lock held."""
        try:
            # The pipe's write end stays in this process alone: os.pipe() descriptors are
            # non-inheritable and close_fds=True, so neither the reaper nor any command holds a
            # copy. A copy elsewhere would keep the pipe open, and EOF, the reaper's only
            # trigger, would never come. Its own session keeps a terminal's Ctrl-C off it.
            # The environment is empty: the reaper needs none, and the runner's holds API keys.
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _CODE],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
                env=_ENV,
            )
        except OSError as exc:
            self._warn(f"cannot start the process-group reaper ({exc})")
            return
        try:
            _write(
                process,
                "".join(f"+{pgid}\n" for pgid in sorted(self._groups))
                + "".join(f"D{path}\n" for path in sorted(self._folders)),
            )
        except OSError as exc:
            _stop(process)
            self._warn(f"the process-group reaper exited at once ({exc})")
            return
        self._process = process

    def _send(self, line: str) -> None:
        """Tell the running reaper one change; replace it if it died. Called with the lock held."""
        assert self._process is not None
        try:
            _write(self._process, line)
        except OSError as exc:
            _stop(self._process)
            self._process = None
            self._warn(f"the process-group reaper died ({exc}); starting a new one")
            if self._groups or self._folders:
                self._start()

    def _warn(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            _log.warning("%s: commands may outlive the runner if it is killed", what)


def _write(process: subprocess.Popen[bytes], text: str) -> None:
    # A plain os.write, not a buffered stream: a failed write leaves nothing queued to fail again.
    assert process.stdin is not None
    data = memoryview(os.fsencode(text))
    while data:
        data = data[os.write(process.stdin.fileno(), data) :]


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Close the reaper's pipe and wait for it, briefly: an exit must not hang on it."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(timeout=_CLOSE_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


_shared: Reaper | None = None
_shared_lock = threading.Lock()


def shared_reaper() -> Reaper:
    """The process-wide reaper; closed at interpreter exit, which kills the groups still watched."""
    global _shared  # noqa: PLW0603 - one reaper per process is the point
    with _shared_lock:
        if _shared is None:
            _shared = Reaper()
            atexit.register(_shared.close)
        return _shared
