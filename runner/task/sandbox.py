"""Checks of a task's `sandbox.writable` folders and `sandbox.network` hosts, made when the task
file is loaded."""

from __future__ import annotations

from pathlib import Path

from runner.workspace import rule_problems

__all__ = ["network_problems", "writable_problems"]

_HOST_HINT = "write hosts such as pypi.org, '*.npmjs.org', 'github.com:443' or '[::1]:8080'"


def network_problems(network: bool | tuple[str, ...]) -> list[tuple[tuple[int, ...], str, str]]:
    """`(key, message, hint)` per bad host of a `sandbox.network` list (DESIGN 19); the key is
    `(index,)`, or `()` for the list itself (an empty one)."""
    if not isinstance(network, tuple):
        return []
    return [
        ((index,) if index >= 0 else (), message, _HOST_HINT)
        for index, message in rule_problems(network)
    ]


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
