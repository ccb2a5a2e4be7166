"""Where a session's files are, relative to its checkout (DESIGN 12: resume from an artifact).

A session log records the checkout's root and the task file and workdir relative to it
(`checkout_record`). `resume` finds them again under the checkout where it runs
(`locate_in_checkout`), never at the absolute paths of the machine that wrote the log: an
artifact folder downloaded into another clone must edit that clone, not the original.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runner.errors import ConfigError

__all__ = ["Located", "checkout_record", "checkout_root", "locate_in_checkout"]


def checkout_root(folder: Path) -> Path | None:
    """The git work tree holding `folder` (the nearest ancestor with a `.git`), or None."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def checkout_record(task_file: Path, workdir: Path, cwd: Path) -> dict[str, Any]:
    """The header's `checkout`: the root (the git work tree holding the task file, else the
    working folder when it holds the task file, else the task file's folder) and the task file
    and workdir relative to it (`workdir` null when it lies outside the root)."""
    cwd = cwd.resolve()
    root = checkout_root(task_file.parent)
    if root is None:
        root = cwd if task_file.resolve().is_relative_to(cwd) else task_file.resolve().parent
    return {
        "root": str(root),
        "task_file": _relative(task_file, root),
        "workdir": _relative(workdir, root),
    }


@dataclass(frozen=True)
class Located:
    """A logged task's paths, found again in the current checkout."""

    root: Path
    """The current checkout: the git work tree holding the working folder, else that folder."""
    recorded_root: str
    """The root the log was written in (on the machine that wrote it)."""
    task_file: Path | None
    """The task file under `root`, or None when the log does not say where it was."""
    workdir: Path | None
    """The workdir under `root`, or None when the log does not say where it was."""
    workdir_problem: str = ""
    """Why the logged workdir was not taken (it would leave the checkout); empty when it was."""


def _inside(root: Path, relative: str | None, what: str, log: Path) -> tuple[Path | None, str]:
    """(`root / relative`, "") or (None, why) when it would leave the checkout; (None, "") when
    the log does not say."""
    if relative is None:
        return None, ""
    pure = PurePosixPath(relative)
    target = (root / pure).resolve()
    if pure.is_absolute() or "\\" in relative or not target.is_relative_to(root):
        return None, (
            f"{log}: the log's {what} {relative!r} lies outside the checkout {root}; "
            "the log was edited or damaged"
        )
    return target, ""


def _recorded(header: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    """(root, task file, workdir) as the log recorded them, relative to the root.

    Logs written before the header had `checkout` are read through `host.cwd`: CI steps run at
    the root of their checkout, so paths under it are taken as relative to it."""
    checkout = header.get("checkout")
    if isinstance(checkout, Mapping):
        task_file, workdir = checkout.get("task_file"), checkout.get("workdir")
        return (
            str(checkout.get("root") or ""),
            task_file if isinstance(task_file, str) else None,
            workdir if isinstance(workdir, str) else None,
        )
    host = header.get("host") if isinstance(header.get("host"), Mapping) else {}
    cwd = str((host or {}).get("cwd") or "")
    task = header.get("task") if isinstance(header.get("task"), Mapping) else {}
    if not cwd:
        return "", None, None

    def under_cwd(text: object) -> str | None:
        if not isinstance(text, str) or not text:
            return None
        try:
            return PurePosixPath(text).relative_to(cwd).as_posix()
        except ValueError:
            return None

    return cwd, under_cwd(header.get("task_file")), under_cwd((task or {}).get("workdir"))


def locate_in_checkout(header: Mapping[str, Any], log: Path, cwd: Path) -> Located:
    """The logged task file and workdir under the checkout that holds `cwd`. A task file that
    would leave the checkout is refused (exit 2); such a workdir is left out, with the reason."""
    root = checkout_root(cwd) or cwd.resolve()
    recorded_root, task_file, workdir = _recorded(header)
    file_path, file_problem = _inside(root, task_file, "task file", log)
    if file_problem:
        raise ConfigError(file_problem)
    workdir_path, workdir_problem = _inside(root, workdir, "workdir", log)
    return Located(
        root=root,
        recorded_root=recorded_root,
        task_file=file_path,
        workdir=workdir_path,
        workdir_problem=workdir_problem,
    )
