"""Checks of a task's `sandbox.writable` folders, made when the task file is loaded."""

from __future__ import annotations

from pathlib import Path

__all__ = ["writable_problems"]


def writable_problems(
    writable: tuple[str, ...], workdir: Path, repository: Path | None
) -> list[tuple[int, str, str]]:
    """`(index, message, hint)` per `writable` entry that is not an existing folder inside the
    repository (the git work tree holding the workdir; the workdir itself outside any)."""
    inside = repository or workdir
    problems = []
    for index, entry in enumerate(writable):
        folder = (workdir / entry).resolve()
        if not folder.is_dir():
            problems.append(
                (index, f"writable folder {folder} does not exist", "create it, or drop the entry")
            )
        elif not folder.is_relative_to(inside):
            problems.append(
                (
                    index,
                    f"writable folder {folder} is outside the repository {inside} (after "
                    "resolving '..' and symlinks)",
                    "commands may write only inside the repository that holds the workdir",
                )
            )
    return problems
