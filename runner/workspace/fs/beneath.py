"""Open a path beneath a root folder without a check-then-open gap (DESIGN 15).

Resolving a path, checking that it lies inside the root and then opening it by name leaves a gap:
another process can swap a folder on the way for a symlink to `/etc` in between, and the open
follows it. Here the kernel does the check while it opens:

- `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (Linux 5.6+, called through
  `syscall(437)`) refuses any step out of the root's descriptor, symlinks and `..` included. A
  write asks for `RESOLVE_NO_SYMLINKS` too, so that the walk below sees every link it follows.
- Otherwise, and whenever `openat2` refuses or needs help (an absolute symlink that points back
  into the root, a write through a symlink, parent folders to create), a walk from the root's
  descriptor opens one component at a time with `O_NOFOLLOW`. A symlink met on the way is read
  with `readlinkat` and its target walked the same way: a relative target from the folder it is
  in, an absolute one from the root when it names a path inside it. `..` above the root, or a
  target outside it, is refused. Each step holds the descriptor of the folder it came from, so a
  swap after a step changes nothing already opened.

Only the standard library: the search worker loads this module by its path.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from pathlib import Path, PurePosixPath

__all__ = ["EscapeError", "open_beneath"]

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (added after the tables merged)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_MAX_LINKS = 40  # as the kernel's own limit
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class EscapeError(OSError):
    """The path leads out of the root (through `..` or a symlink), or into `.git` for a write."""


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


_openat2_works: bool | None = None
"""None until the first call; False when the kernel or libc has no openat2."""
_libc: ctypes.CDLL | None = None


def _openat2(dir_fd: int, path: str, flags: int, mode: int, resolve: int) -> int | None:
    """The descriptor, or None when openat2 is not available. Raises OSError as open does."""
    global _openat2_works, _libc  # noqa: PLW0603 - probed once per process
    if _openat2_works is False:
        return None
    try:
        libc = _libc = _libc or ctypes.CDLL(None, use_errno=True)
    except OSError:
        _openat2_works = False
        return None
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, resolve)
    fd = int(libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.byref(how), 24))
    if fd >= 0:
        _openat2_works = True
        return fd
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM) and not _openat2_works:
        _openat2_works = False  # no such syscall here, or a seccomp filter refuses it
        return None
    raise OSError(code, os.strerror(code), path)


def open_beneath(
    root: Path, path: str | PurePosixPath, flags: int, mode: int = 0o666, *, write: bool = False
) -> int:
    """A descriptor for `path` (relative to `root`) opened with `flags`, that never leaves `root`.

    With `write`, missing parent folders are created and no component may be `.git`. With
    `O_NOFOLLOW` in `flags`, a symlink as the last component is refused (ELOOP), as by `open`.

    Raises:
        EscapeError: the path leads out of the root, or (`write`) into a `.git`.
        OSError: as `open` raises it (missing file, a folder, permissions, ...).
    """
    rel = PurePosixPath(path)
    if rel.is_absolute():
        raise EscapeError(errno.EXDEV, "an absolute path", str(path))
    flags |= _CLOEXEC
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        resolve = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS
        if write:
            resolve |= _RESOLVE_NO_SYMLINKS
        if not (write and _has_git(rel.parts)):
            try:
                fd = _openat2(root_fd, str(rel), flags, mode, resolve)
            except OSError as error:
                # EXDEV: out of the root or an absolute link; ELOOP: a link (for a write);
                # ENOENT: a folder to create; EAGAIN: a rename raced `..`. The walk decides.
                if error.errno not in (errno.EXDEV, errno.ELOOP, errno.ENOENT, errno.EAGAIN):
                    raise
                if error.errno == errno.ENOENT and not write:
                    raise
            else:
                if fd is not None:
                    return fd
        return _walk(root_fd, Path(os.path.realpath(root)), rel, flags, mode, write)
    finally:
        os.close(root_fd)


def _has_git(parts: tuple[str, ...]) -> bool:
    return any(part.lower() == ".git" for part in parts)


def _walk(root_fd: int, root: Path, rel: PurePosixPath, flags: int, mode: int, write: bool) -> int:
    stack = [os.dup(root_fd)]
    pending = list(rel.parts)
    links = 0
    try:
        while pending:
            name = pending.pop(0)
            if name in ("", "."):
                continue
            if name == "..":
                if len(stack) == 1:
                    raise EscapeError(errno.EXDEV, "'..' leads out of the workspace", str(rel))
                os.close(stack.pop())
                continue
            if write and name.lower() == ".git":
                raise EscapeError(errno.EPERM, "a .git folder cannot be written", str(rel))
            last = not pending
            try:
                if last:
                    return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=stack[-1])
                stack.append(_open_folder(name, stack[-1], write))
                continue
            except OSError as error:
                if last and flags & os.O_NOFOLLOW:
                    raise
                target = _link_target(name, stack[-1], error)
            links += 1
            if links > _MAX_LINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(rel))
            if target.is_absolute():
                if not target.is_relative_to(root):
                    raise EscapeError(errno.EXDEV, "a symlink leads out of the workspace", str(rel))
                for fd in stack[1:]:
                    os.close(fd)
                del stack[1:]
                target = target.relative_to(root)
            pending[:0] = target.parts
        return os.open(".", flags | os.O_NOFOLLOW, mode, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def _open_folder(name: str, parent: int, create: bool) -> int:
    """A folder's descriptor, never through a symlink; created first when `create` and missing."""
    folder = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
    try:
        return os.open(name, folder, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # made at this moment by another: open that
        os.mkdir(name, 0o777, dir_fd=parent)
    return os.open(name, folder, dir_fd=parent)


def _link_target(name: str, parent: int, error: OSError) -> PurePosixPath:
    """The target of the symlink `name` that made an open fail, or `error` when it is no link."""
    if error.errno not in (errno.ELOOP, errno.ENOTDIR):
        raise error
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISLNK(info.st_mode):
            raise error
        return PurePosixPath(os.readlink(name, dir_fd=parent))
    except OSError as gone:
        if gone is error:
            raise
        # Swapped again between the open and the look: fail as the open did; the caller retries.
        raise error from None
