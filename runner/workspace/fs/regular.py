"""Reads and writes of regular files only, that never wait on a FIFO, socket or device.

The in-process tools run on the runner's event loop. A plain `open()` of a FIFO waits for a
writer (or a reader) forever, and then nothing else answers: not the other tasks, not SIGTERM. So
every file a tool reads or writes is opened beneath its root without a check-then-open gap
(`runner.workspace.fs.beneath`), with `O_NONBLOCK` (an open that cannot wait), checked
with `fstat` on the descriptor it got (the file actually opened, not the one a path named a moment
earlier), and refused unless it is a regular file. `O_NONBLOCK` changes nothing for regular files.

A regular file with more than one hard link is refused too: its other names may be outside the
workspace, and finding them would mean searching the whole filesystem. A file in a checkout
normally has one link; copy it (`cp`) if a tool must read one that has more.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runner.workspace.fs.beneath import EscapeError, open_beneath
from runner.workspace.paths import WorkspaceError

__all__ = ["read_regular", "write_regular"]

_FLAGS = os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def read_regular(given: str, real: Path, base: Path, max_bytes: int, *, hint: str = "") -> bytes:
    """The bytes of the regular file `real` (the model called it `given`), at most `max_bytes`;
    it is opened beneath `base` (runner.workspace.fs.beneath), which it must lie in.

    Raises:
        WorkspaceError: it does not exist, is a folder or not a regular file, has other hard
            links, or is larger than `max_bytes` (`hint` says what to do instead).
    """
    fd = _open(given, real, base, os.O_RDONLY)
    try:
        info = _check(given, fd)
        if info.st_size > max_bytes:
            raise WorkspaceError(
                f"{given!r} is {info.st_size} bytes, over the {max_bytes}-byte limit{hint}"
            )
        chunks: list[bytes] = []
        left = max_bytes + 1  # the file may grow while it is read: never more than the limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise WorkspaceError(f"{given!r} grew over the {max_bytes}-byte limit{hint}")
        return data
    finally:
        os.close(fd)


def write_regular(given: str, real: Path, base: Path, data: bytes) -> bool:
    """Write `data` as the whole content of `real`, creating it and its parent folders beneath
    `base`; whether it existed before.

    The file is checked before it is truncated: a FIFO, device or hard-linked file is refused
    with its content untouched.
    """
    existed = os.path.lexists(real)
    fd = _open(given, real, base, os.O_WRONLY | os.O_CREAT, mode=0o666)
    try:
        _check(given, fd)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return existed


def _open(given: str, real: Path, base: Path, flags: int, mode: int = 0o777) -> int:
    try:
        rel = real.relative_to(base).as_posix()
        return open_beneath(base, rel, flags | _FLAGS, mode, write=bool(flags & os.O_CREAT))
    except EscapeError as escape:
        raise WorkspaceError(
            f"{given!r} leads out of the workspace root or into .git ({escape.strerror}); it "
            "changed while it was opened, so nothing was read or written"
        ) from None
    except FileNotFoundError:
        raise WorkspaceError(f"{given!r} does not exist") from None
    except IsADirectoryError:
        raise WorkspaceError(f"{given!r} is a folder, not a file") from None
    except OSError as exc:
        # ENXIO: a FIFO with no reader, opened for writing without waiting for one.
        raise WorkspaceError(
            f"{given!r} cannot be opened ({exc.strerror}); only regular files can be read "
            "or written"
        ) from None


def _check(given: str, fd: int) -> os.stat_result:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise WorkspaceError(f"{given!r} is a folder; use list_files to see what it holds")
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(
            f"{given!r} is not a regular file (a FIFO, socket or device); the file tools "
            "only read and write regular files"
        )
    if info.st_nlink > 1:
        raise WorkspaceError(
            f"{given!r} has {info.st_nlink} hard links; its other names may be outside the "
            "workspace, where the file tools must not reach, so it is refused"
        )
    return info
