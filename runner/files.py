"""A bounded, .gitignore-aware walk of a folder, shared by the prompt and the workspace server."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pathspec

__all__ = ["Listing", "list_tree"]

_ALWAYS_SKIPPED = {".git", ".hg", ".svn"}


@dataclass(frozen=True)
class Listing:
    """Paths relative to the root (folders end with `/`), and whether the walk was cut short."""

    paths: list[str]
    truncated: bool


def _ignore_spec(folder: Path) -> pathspec.GitIgnoreSpec | None:
    gitignore = folder / ".gitignore"
    try:
        lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def list_tree(root: Path, limit: int, recursive: bool = True) -> Listing:
    """Breadth-first listing of `root`, honouring every .gitignore on the way, at most `limit`."""
    paths: list[str] = []
    # Each queued folder carries the ignore specs that apply to it, with the folder they are from.
    queue: list[tuple[Path, list[tuple[Path, pathspec.GitIgnoreSpec]]]] = [(root, [])]
    while queue:
        folder, inherited = queue.pop(0)
        specs = list(inherited)
        own = _ignore_spec(folder)
        if own is not None:
            specs.append((folder, own))
        try:
            entries = sorted(os.scandir(folder), key=lambda e: (not e.is_dir(), e.name))
        except OSError:
            continue
        for entry in entries:
            if entry.name in _ALWAYS_SKIPPED:
                continue
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if _ignored(path, is_dir, specs):
                continue
            if len(paths) >= limit:
                return Listing(paths, truncated=True)
            relative = path.relative_to(root).as_posix()
            paths.append(relative + "/" if is_dir else relative)
            if is_dir and recursive:
                queue.append((path, specs))
    return Listing(paths, truncated=False)


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, pathspec.GitIgnoreSpec]]) -> bool:
    for base, spec in specs:
        relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if spec.match_file(relative):
            return True
    return False
