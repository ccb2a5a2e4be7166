"""Path confinement for the workspace server: every path the model gives stays inside the root."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runner.workspace.sandbox import current

__all__ = ["Confinement", "WorkspaceError"]


class WorkspaceError(Exception):
    """A refusal or failure the model should read; the message says what to do instead."""


class Confinement:
    """Resolves the model's paths against the root, refusing anything that leaves it.

    Symlinks are resolved before the check, for paths that do not exist yet through their deepest
    existing parent, so a link (or a link inside a missing path) cannot point out of the root.
    """

    def __init__(self, root: Path, readable: tuple[Path, ...] = ()) -> None:
        self.root = root.resolve(strict=True)
        self._readable = tuple(path.resolve() for path in readable)

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """The real path for `path` (relative to the root, or absolute inside it)."""
        if not path.strip():
            raise WorkspaceError("the path is empty; give a path relative to the workspace root")
        if "\x00" in path:
            raise WorkspaceError("the path contains a NUL byte")
        given = Path(path)
        try:
            real = Path(os.path.realpath(given if given.is_absolute() else self.root / given))
        except OSError as error:  # a folder on the way went away while it was resolved
            raise WorkspaceError(f"{path!r} cannot be resolved: {error.strerror}") from None
        if not self._inside(real, write=write):
            raise WorkspaceError(
                f"{path!r} is outside the workspace root {self.root} (after resolving '..' and "
                "symlinks); only paths inside the root can be used"
            )
        if write:
            self._check_writable(path, real)
        return real

    def base_of(self, real: Path) -> Path:
        """The root (or the extra readable folder) that `real`, a path from `resolve`, lies in:
        the folder a race-free open of it starts from (runner.workspace.fs.beneath)."""
        if real.is_relative_to(self.root):
            return self.root
        return next(extra for extra in self._readable if real.is_relative_to(extra))

    def relative(self, real: Path) -> str:
        """How the model should see a path: relative to the root, `.` for the root itself."""
        try:
            return real.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(real)

    def _inside(self, real: Path, *, write: bool) -> bool:
        if real.is_relative_to(self.root):
            return True
        return not write and any(real.is_relative_to(extra) for extra in self._readable)

    def _check_writable(self, given: str, real: Path) -> None:
        rel = real.relative_to(self.root)
        # Any `.git` on the way, not only the root's: a nested repository's hooks run as well,
        # and a `.git` file (a worktree's or submodule's gitfile) says where its repository is.
        if any(part.lower() == ".git" for part in rel.parts):
            raise WorkspaceError(
                f"{given!r} is inside a .git folder (or is a .git file); a repository's "
                "internals cannot be written (use execute_command with git commands instead)"
            )
        sandbox = current()
        for locked in sandbox.locked if sandbox is not None else ():
            if real.is_relative_to(locked):
                raise WorkspaceError(
                    f"{given!r} is inside {locked}, which the run keeps for its own files (its "
                    "output folder: session logs, reports, the task file it generated); it "
                    "cannot be written by the task (write elsewhere in the workspace)"
                )
        try:
            info = real.lstat()
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            raise WorkspaceError(f"{given!r} is a directory, not a file")
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise WorkspaceError(
                f"{given!r} has {info.st_nlink} hard links; a write could change a file outside "
                "the workspace, so it is refused (delete it and write a new file instead)"
            )
