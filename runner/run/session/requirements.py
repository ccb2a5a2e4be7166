"""`success.require` (DESIGN 12): what must have happened for a reported success to count.

- `min_tool_calls: N`: at least N tool calls the policy let through (attempt_completion aside).
- `no_denied_calls: true`: no tool call refused by the tool policy.
- `changed_files: true`: the workdir's git state differs at completion from the task's start.
  The state is HEAD, the list of the workdir's files (untracked included, ignored ones not;
  tracked files of HEAD too) and the content of each, so an edit to a file that was already
  modified, or a commit, counts as a change too. The loader refuses `changed_files` outside a
  git repository (exit 2). On resume the baseline is the resumed session's start.

The agent can write `.git/config`, `.gitattributes` and the `.git` file, so git runs as the
runner's own git does (`runner.run.session.gitsafe`): the git folder is recorded with the
baseline, before the agent runs; the listing comes from a shadow git folder with an empty index
and no repository config (no filter, fsmonitor or hook can run); the environment is minimal.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.run.session.gitsafe import GitFolder, Shadow, git_env, record_folder, run_git
from runner.run.turn import Budget
from runner.task import Require

__all__ = ["GitState", "git_state", "requirement_problem"]

_LIST_LIMIT = 8 * 1024 * 1024
"""Bytes of a file listing read; a listing past this is compared by what was read."""


@dataclass(frozen=True)
class GitState:
    """A fingerprint of the workdir's git state, or why it could not be taken."""

    digest: str = ""
    error: str = ""
    folder: GitFolder | None = None
    """The git folder recorded with the baseline; the state at the end reads it, not `.git`."""


async def git_state(
    workdir: Path, env: Mapping[str, str], baseline: GitState | None = None
) -> GitState:
    """Fingerprint HEAD, the workdir's files and their content. Without `baseline` (at the
    start, before the agent runs) the git folder is found and recorded; with it, reused."""
    folder = baseline.folder if baseline is not None else None
    if folder is None:
        folder = await asyncio.to_thread(record_folder, workdir, env)
    if folder is None:
        return GitState(error=f"{workdir} is not in a git work tree")
    head = await _head(folder, env)
    shadow = Shadow(folder, folder.top, head or "0" * 40)
    try:
        listed = await _listing(shadow, env, workdir, head)
    finally:
        shadow.close()
    if isinstance(listed, str):
        return GitState(error=listed, folder=folder)
    digest = hashlib.sha256((head or "(no HEAD)").encode())
    for name in sorted(set(listed.split(b"\0")) - {b""}):
        digest.update(name + b"\0")
        digest.update(_content_digest(folder.top / os.fsdecode(name)))
    return GitState(digest=digest.hexdigest(), folder=folder)


async def _head(folder: GitFolder, env: Mapping[str, str]) -> str:
    """The commit HEAD of the recorded git folder points at, "" when it has none."""
    pinned = git_env(env, GIT_DIR=str(folder.git_dir), GIT_OPTIONAL_LOCKS="0")
    code, out, _ = await run_git(folder.top, pinned, "rev-parse", "--verify", "-q", "HEAD")
    return out.decode("ascii", errors="replace").strip() if code == 0 else ""


async def _listing(shadow: Shadow, env: Mapping[str, str], workdir: Path, head: str) -> bytes | str:
    """Every file of the workdir git does not ignore, and HEAD's files there, NUL-separated
    and relative to the top; or what went wrong. The shadow's index is empty, so every file
    on disk is `other`; nothing is written."""
    code, others, err = await shadow.run(
        env,
        "ls-files",
        "-z",
        "--full-name",
        "--others",
        "--exclude-standard",
        "--",
        ".",
        cwd=workdir,
    )
    if code != 0:
        return f"git ls-files failed: {err.splitlines()[-1] if err else code}"
    tracked = b""
    if head:
        code, tracked, err = await shadow.run(
            env, "ls-tree", "-r", "-z", "--name-only", "--full-name", head, "--", ".", cwd=workdir
        )
        if code != 0:
            return f"git ls-tree failed: {err.splitlines()[-1] if err else code}"
    return (others[:_LIST_LIMIT] + b"\0" + tracked[:_LIST_LIMIT]).strip(b"\0")


def _content_digest(path: Path) -> bytes:
    """The file's content hash; a folder, a missing file or an unreadable one by what it is."""
    if path.is_symlink():
        with contextlib.suppress(OSError):
            return b"link:" + os.fsencode(path.readlink())
    if not path.is_file():
        return b"missing" if not path.exists() else b"other"
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError as error:
        return f"unreadable:{error.errno}".encode()
    return digest.digest()


def requirement_problem(
    require: Require, budget: Budget, before: GitState | None, after: GitState | None
) -> str | None:
    """Which requirement the task misses and why, or None when it meets them all."""
    allowed = budget.tool_calls - budget.denied_calls
    if require.min_tool_calls is not None and allowed < require.min_tool_calls:
        return (
            f"require.min_tool_calls: the agent made {allowed} tool call(s) that ran, "
            f"{require.min_tool_calls} required"
        )
    if require.no_denied_calls and budget.denied_calls:
        return (
            f"require.no_denied_calls: {budget.denied_calls} tool call(s) were refused by the "
            "tool policy"
        )
    if require.changed_files:
        for state in (before, after):
            if state is None or state.error:
                why = state.error if state else "no baseline was taken"
                return f"require.changed_files: cannot read the workdir's git state ({why})"
        assert before is not None and after is not None
        if before.digest == after.digest:
            return "require.changed_files: the workdir's git status did not change during the task"
    return None
