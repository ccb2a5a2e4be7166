"""Bounded, .gitignore-aware folder walks, shared by the prompt and the workspace server."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from runner.workspace.fs.beneath import open_beneath
from runner.workspace.fs.confined_read import DEFAULT_PROMPT_FILE_BYTES, read_confined
from runner.workspace.fs.repo_ignore import repository_rules

__all__ = ["IgnoreRules", "Listing", "gitignore_rules", "is_ignored", "list_tree", "walk_entries"]

_ALWAYS_SKIPPED = {".git", ".hg", ".svn"}
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)

IgnoreRules = list[tuple[Path, pathspec.GitIgnoreSpec]]
"""The .gitignore specs that apply to a folder, each with the folder it came from."""


@dataclass(frozen=True)
class Listing:
    """Paths relative to the root (folders end with `/`), and whether the walk was cut short."""

    paths: list[str]
    truncated: bool


def gitignore_rules(
    folder: Path, root: Path | None = None, max_bytes: int = DEFAULT_PROMPT_FILE_BYTES
) -> IgnoreRules:
    """The rules of `folder/.gitignore`, or none when it has no readable one.

    Only a regular file that resolves inside `root` (default: `folder`) is read, and at most
    `max_bytes` of it: a repository's `.gitignore` may be a symlink to anything.
    """
    read = read_confined(folder / ".gitignore", root or folder, max_bytes)
    if read is None:
        return []
    lines = read.text.splitlines()
    if read.truncated and lines:
        lines.pop()  # the last line may be cut in the middle
    return [(folder, pathspec.GitIgnoreSpec.from_lines(lines))]


def is_ignored(path: Path, is_dir: bool, rules: IgnoreRules) -> bool:
    """Whether any rule ignores `path`, matched relative to the folder of its .gitignore."""
    for base, spec in rules:
        relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if spec.match_file(relative):
            return True
    return False


def walk_entries(
    root: Path, start: Path, *, recursive: bool
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(path relative to `root`, entry) under `start`, sorted by name within each folder, each
    folder before its contents; `.git` and what the repository's ignore files (from its root, and
    `.git/info/exclude`: repo_ignore) and the .gitignore files from `root` down ignore are
    skipped. The workspace's list_files and the search worker both walk with it.

    Folders are read through descriptors: `start` opened beneath `root`, each subfolder from its
    parent's descriptor without following a symlink, so a folder swapped for a link to outside
    the root while the walk runs is not listed."""
    parts = start.relative_to(root).parts
    folders = [root.joinpath(*parts[:depth]) for depth in range(len(parts) + 1)]
    rules = repository_rules(root, DEFAULT_PROMPT_FILE_BYTES)
    rules += [rule for folder in folders for rule in gitignore_rules(folder)]
    try:
        fd = open_beneath(root, "/".join(parts) or ".", _FOLDER)
    except OSError:
        return
    yield from _walk_entries(root, start, fd, rules, recursive)


def _walk_entries(
    root: Path, folder: Path, fd: int, rules: IgnoreRules, recursive: bool
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Entries of the folder open as `fd` (closed at the end), which is `folder` by path."""
    try:
        try:
            children = sorted(os.scandir(fd), key=lambda e: e.name)
        except OSError:
            return
        for child in children:
            path = folder / child.name
            is_dir = child.is_dir(follow_symlinks=False)
            if child.name == ".git" or is_ignored(path, is_dir, rules):
                continue
            yield path.relative_to(root).as_posix(), child
            if is_dir and recursive:
                try:
                    inner = os.open(child.name, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    continue  # gone, or swapped for a symlink, since it was listed
                more = [*rules, *gitignore_rules(path)]
                yield from _walk_entries(root, path, inner, more, recursive)
    finally:
        os.close(fd)


def list_tree(
    root: Path, limit: int, recursive: bool = True, max_file_bytes: int = DEFAULT_PROMPT_FILE_BYTES
) -> Listing:
    """Breadth-first listing of `root`, honouring every .gitignore on the way (and those of the
    repository above it: repo_ignore), at most `limit`.

    Each .gitignore is read only as `gitignore_rules` allows, at most `max_file_bytes` of it.
    """
    paths: list[str] = []
    queue = deque([(root, repository_rules(root, max_file_bytes))])
    while queue:
        folder, inherited = queue.popleft()
        rules = [*inherited, *gitignore_rules(folder, root, max_file_bytes)]
        try:
            entries = sorted(os.scandir(folder), key=lambda e: (not e.is_dir(), e.name))
        except OSError:
            continue
        for entry in entries:
            if entry.name in _ALWAYS_SKIPPED:
                continue
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_ignored(path, is_dir, rules):
                continue
            if len(paths) >= limit:
                return Listing(paths, truncated=True)
            relative = path.relative_to(root).as_posix()
            paths.append(relative + "/" if is_dir else relative)
            if is_dir and recursive:
                queue.append((path, rules))
    return Listing(paths, truncated=False)
