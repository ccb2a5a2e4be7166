"""The probe's trial command: `python -I -S -c SOURCE RW RO SOCKET PORT PID START` in a sandbox.

`probing` runs this file's source inside a candidate sandbox (as a command runs: the same argv,
filter and environment) and reads back one JSON object: for each property the record may claim
(DESIGN 18), None when it held, or what the trial managed that it should not have:

- `fs`: writes in RW (the workdir) but not in RO beside it, and `/` cannot be remounted
  read-write (as root with capabilities, a remount would make the whole tree writable);
- `caps`: the effective, permitted and ambient capability sets are empty;
- `net`: a TCP connect to the runner's listener on 127.0.0.1:PORT fails;
- `pid`: the runner's process (PID, started at START clock ticks) is not visible in /proc;
- `sockets`: the unix socket SOCKET, the runner's, outside the workdir, cannot be connected.

Standard library only and no runner import: it runs with `-I -S` under a read-only filesystem.
"""

from __future__ import annotations

import ctypes
import json
import socket
import sys
from pathlib import Path

__all__ = ["main"]

_MS_REMOUNT, _MS_BIND = 32, 4096


def _fs(rw: Path, ro: Path) -> str | None:
    libc = ctypes.CDLL(None, use_errno=True)
    for flags in (_MS_REMOUNT | _MS_BIND, _MS_REMOUNT):
        if libc.mount(b"none", b"/", None, flags, None) == 0:
            return "a remount of / read-write succeeded"
    (rw / "allowed").write_text("ok", encoding="utf-8")
    try:
        (ro / "denied").write_text("no", encoding="utf-8")
    except OSError:
        return None
    return "a write outside the workdir succeeded"


def _caps() -> str | None:
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    held = [
        line.split(":")[0]
        for line in status.splitlines()
        if line.startswith(("CapEff:", "CapPrm:", "CapAmb:")) and int(line.split()[1], 16)
    ]
    return f"capabilities held ({', '.join(held)})" if held else None


def _net(port: int) -> str | None:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
    except OSError:
        return None
    return "a TCP connect to a loopback listener succeeded"


def _pid(pid: int, start: str) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return "the runner's process is visible" if fields[19:20] == [start] else None


def _sockets(path: str) -> str | None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(3)
            client.connect(path)
    except OSError:
        return None
    return "a unix socket outside the workdir was connected"


def main(argv: list[str]) -> int:
    """Try each property; print the findings as one JSON line."""
    rw, ro, unix_path, port, pid, start = argv
    found = {
        "fs": _fs(Path(rw), Path(ro)),
        "caps": _caps(),
        "net": _net(int(port)),
        "pid": _pid(int(pid), start),
        "sockets": _sockets(unix_path),
    }
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
