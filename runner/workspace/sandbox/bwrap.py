"""The bubblewrap argv of a confined command (DESIGN 15 and 18), one concern per function.

- `_namespaces`: a PID namespace (no process of the runner's is visible; the command's processes,
  `setsid` escapees too, die with it) and, without network, a network namespace. Everything in
  the sandbox stays in the process group the runner started (no `--new-session`), so one
  `killpg` of a fired limit reaches the namespace's first process at once, and the namespace dies
  with it. That first process is the command (`--as-pid-1`): no bubblewrap process is inside for
  the command to read, trace or alter (its init ran dumpable, as the runner's user).
- `_capabilities`: every capability dropped. As root (most containers) bubblewrap keeps them by
  default, and a command could `mount -o remount,rw /` and write anywhere; bubblewrap also sets
  no_new_privs, so a setuid program or a root `exec` does not get them back. A user namespace that
  maps root to an unprivileged id was considered: without a setuid `newuidmap` the id outside
  stays the caller's (root), so it adds nothing to the dropped capabilities, and it fails where
  nested user namespaces are refused.
- `_mounts`: the root read-only; the places where unix sockets and shared scratch files live
  masked: `/tmp` is the task's private TMPDIR (so what a command or hook writes there stays
  the task's, and persists between its commands), `/var/tmp` and `/run` (`/var/run`) are empty
  tmpfs; the runner's HOME an empty tmpfs; then the folders that lie under a masked one bound
  back where they are: the task's project (its task file's and workdir's folders), git folders
  and toolchains read-only, the workdir, the private folders and the `writable` ones
  read-write. The masks hide the usual sockets and other tasks' temporary files; the seccomp
  filter (`seccomp`, `--seccomp FD`) refuses unix sockets wherever they are, beside the workdir
  too.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

__all__ = ["bwrap_argv", "masked_roots"]

_MASKED = ("/tmp", "/var/tmp", "/run", "/var/run")


@functools.cache
def masked_roots() -> tuple[Path, ...]:
    """The folders a confined command sees private or empty (`/var/run` is usually `/run`)."""
    found: dict[Path, None] = {}
    for name in _MASKED:
        folder = Path(name).resolve()
        if folder.is_dir() and folder != Path("/"):
            found[folder] = None
    return tuple(found)


def bwrap_argv(
    executable: str,
    command: Sequence[str],
    cwd: Path,
    *,
    tmp: Path,
    network: bool,
    read_write: Sequence[Path],
    hidden: Sequence[Path],
    readable: Sequence[Path],
    filter_fd: int | None,
    locked: Sequence[Path] = (),
    pinned: Sequence[Path] = (),
) -> list[str]:
    """`command` under bubblewrap in `cwd`; `tmp` becomes `/tmp`, `read_write` (the private
    folders, the workdir, the writable ones) stay writable; inside them `pinned` are bound onto
    themselves (they cannot be renamed) and `locked` bound read-only (DESIGN 24)."""
    # No `--new-session`: it would put bubblewrap's init and the command in a session (and a
    # process group) of their own, which the runner's kill of the command's group misses; they
    # then die only by `--die-with-parent`, which a kill during bubblewrap's start outruns
    # (the sandbox ran on, reparented to init). The runner starts bwrap in a new session
    # already (no controlling terminal), and the filter refuses TIOCSTI (`seccomp`).
    argv = [executable, "--die-with-parent"]
    argv += _namespaces(network)
    argv += _capabilities()
    argv += _mounts(tmp, network, read_write, hidden, readable)
    argv += _locks(locked, pinned)
    argv += [] if filter_fd is None else ["--seccomp", str(filter_fd)]
    return [*argv, "--chdir", str(cwd), "--", *command]


def _namespaces(network: bool) -> list[str]:
    # `--as-pid-1`: no bubblewrap init inside; it ran as the runner's user, dumpable, so the
    # command could write its memory (`/proc/1/mem`), as root and as another user alike.
    return ["--unshare-pid", "--as-pid-1", *([] if network else ["--unshare-net"])]


def _capabilities() -> list[str]:
    return ["--cap-drop", "ALL"]


def _mounts(
    tmp: Path,
    network: bool,
    read_write: Sequence[Path],
    hidden: Sequence[Path],
    readable: Sequence[Path],
) -> list[str]:
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    masked = masked_roots()
    for root in masked:
        argv += ["--bind", str(tmp), str(root)] if root == Path("/tmp") else ["--tmpfs", str(root)]
    # Order matters: a folder bound back under a masked one may hold the hidden HOME (so HOME's
    # tmpfs comes after it), and HOME may hold toolchains (bound back after the tmpfs).
    readable = [*readable, *_resolver(network, masked)]
    outer = [path for path in readable if not _under(path, hidden)]
    for path in outer:
        argv += ["--ro-bind", str(path), str(path)]
    for path in hidden:
        if not _under(path, masked) or _under(path, outer):  # else a mask hides it already
            argv += ["--tmpfs", str(path)]
    for path in readable:
        if path not in outer:
            argv += ["--ro-bind", str(path), str(path)]
    for path in read_write:
        argv += ["--bind", str(path), str(path)]
    return argv


def _locks(locked: Sequence[Path], pinned: Sequence[Path]) -> list[str]:
    """After the writable binds: `--bind-try` and `--ro-bind-try` (a path the agent could not
    have removed yet, but a missing one is no error)."""
    argv: list[str] = []
    for path in pinned:
        argv += ["--bind-try", str(path), str(path)]
    for path in locked:
        argv += ["--ro-bind-try", str(path), str(path)]
    return argv


def _resolver(network: bool, masked: Sequence[Path]) -> list[Path]:
    """With network, `/etc/resolv.conf` where it points under `/run` (systemd-resolved)."""
    if not network:
        return []
    target = Path("/etc/resolv.conf").resolve()
    return [target] if target.is_file() and _under(target, masked) else []


def _under(path: Path, roots: Sequence[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)
