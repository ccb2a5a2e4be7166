"""The ignore rules a repository applies to a workdir below its root, as git reads them.

A task's workdir is often a subfolder of a repository (`workdir: packages/web`), and the
repository's own `.gitignore` (`node_modules/` at its root) and `.git/info/exclude` apply there
too. Without them a listing of 200 entries was 193 of `node_modules/`. Git is not run: the files
are read, each bounded and only when it is a regular file inside the repository, and a `.git`
file (a worktree's or a submodule's `gitdir: ...`) is followed only to a folder inside the
repository, since the repository under test controls it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pathspec

from runner.workspace.fs.confined_read import read_confined

__all__ = ["repository_rules"]

_MAX_LEVELS = 64
"""How many folders above the workdir are looked at for the repository's `.git`."""

_GITDIR_FILE_BYTES = 4096
"""A `.git` file holds one line, `gitdir: <path>`."""

Rules = list[tuple[Path, pathspec.GitIgnoreSpec]]


def repository_rules(workdir: Path, max_bytes: int) -> Rules:
    """The rules of `.git/info/exclude` and of every `.gitignore` from the repository's root down
    to the workdir's parent, each with the folder its patterns are relative to.

    None when the workdir is in no repository, or when these rules ignore the workdir itself
    (git would list nothing there; the task chose that folder, so its files are shown). The rules
    match paths under `workdir` as given, so a relative `workdir` gets none."""
    top = _repository_root(workdir) if workdir.is_absolute() else None
    if top is None:
        return []
    rules = _exclude_rules(top, max_bytes)
    folder = top
    for part in workdir.relative_to(top).parts:
        rules += _rules(folder / ".gitignore", folder, top, max_bytes)
        folder = folder / part
        if _ignores(rules, folder):
            return []
    return rules


def _repository_root(workdir: Path) -> Path | None:
    """The nearest folder at or above the workdir with a `.git` folder or file."""
    for folder in [workdir, *workdir.parents][:_MAX_LEVELS]:
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def _exclude_rules(top: Path, max_bytes: int) -> Rules:
    """The rules of `info/exclude` in the repository's git folder, when that folder is inside it."""
    dot_git = top / ".git"
    if dot_git.is_symlink():
        return []
    git_dir = dot_git
    if not dot_git.is_dir():
        read = read_confined(dot_git, top, _GITDIR_FILE_BYTES)
        if read is None or not read.text.startswith("gitdir:"):
            return []
        target = read.text.removeprefix("gitdir:").strip().splitlines()[0:1]
        if not target:
            return []
        git_dir = Path(os.path.normpath(top / target[0]))
    return _rules(git_dir / "info" / "exclude", top, top, max_bytes)


def _rules(path: Path, base: Path, top: Path, max_bytes: int) -> Rules:
    """The rules of one ignore file read only inside `top`, its patterns relative to `base`."""
    read = read_confined(path, top, max_bytes)
    if read is None:
        return []
    lines = read.text.splitlines()
    if read.truncated and lines:
        lines.pop()  # the last line may be cut in the middle
    return [(base, pathspec.GitIgnoreSpec.from_lines(lines))]


def _ignores(rules: Rules, folder: Path) -> bool:
    return any(spec.match_file(folder.relative_to(base).as_posix() + "/") for base, spec in rules)
