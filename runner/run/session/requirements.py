"""`success.require` (DESIGN 12): what must have happened for a reported success to count.

- `min_tool_calls: N`: at least N tool calls the policy let through (attempt_completion aside).
- `no_denied_calls: true`: no tool call refused by the tool policy.
- `changed_files: true`: the workdir's git state differs at completion from the task's start.
  The state is HEAD and the tree of the workdir's files as `git add -A` would record them
  (untracked files included, ignored ones not), so an edit to a file that was already modified,
  or a commit, counts as a change too; staging alone does not. The loader refuses
  `changed_files` outside a git repository (exit 2). On resume the baseline is the resumed
  session's start.

The agent can write `.git/config`, `.gitattributes` and the `.git` file, so git runs as the
runner's own git does (`runner.workspace.git.gitsafe`): the git folder is recorded with the
baseline, before the agent runs; `git add` and `write-tree` run in a shadow git folder with no
repository config (no filter, fsmonitor or hook can run) and an index of the runner's, seeded
from the repository's own at the start (so only files whose times changed are hashed), objects
of its own (the checkout's object store is not written); the environment is minimal.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.run.turn import Budget
from runner.task import Require
from runner.workspace import GitError, GitFolder, Shadow, git_env, record_folder, run_git

__all__ = ["GitState", "change_diff", "git_state", "requirement_problem"]

_INDEX_LIMIT = 512 * 1024 * 1024
"""A repository's index larger than this is not copied: the fingerprint then hashes every file."""


@dataclass(frozen=True)
class GitState:
    """A fingerprint of the workdir's git state, or why it could not be taken."""

    digest: str = ""
    error: str = ""
    folder: GitFolder | None = None
    """The git folder recorded with the baseline; the state at the end reads it, not `.git`."""
    index: bytes = field(default=b"", repr=False, compare=False)
    """The shadow's index after the baseline: its file times let git hash only what changed."""
    head: str = ""
    """The commit HEAD pointed at ("" when it had none)."""


async def git_state(
    workdir: Path, env: Mapping[str, str], baseline: GitState | None = None
) -> GitState:
    """Fingerprint HEAD and the workdir's files (`git add -A` into a shadow index, then
    `write-tree`). Without `baseline` (at the start, before the agent runs) the git folder is
    found and recorded, and the repository's own index seeds the shadow's; with it, reused."""
    folder = baseline.folder if baseline is not None else None
    if folder is None:
        folder = await asyncio.to_thread(record_folder, workdir, env)
        if folder is None:
            return GitState(error=f"{workdir} is not in a git work tree")
        seed = await asyncio.to_thread(_read_index, folder.git_dir / "index")
    else:
        seed = baseline.index if baseline is not None else b""
    head = await _head(folder, env)
    shadow = Shadow(
        folder,
        folder.top,
        head or "0" * (64 if folder.object_format == "sha256" else 40),
        keep_objects=False,
    )
    try:
        tree = await _tree(shadow, env, workdir, seed)
        if tree.startswith("error: ") and seed:  # an index git cannot read in the shadow (split)
            tree = await _tree(shadow, env, workdir, b"")
        index = await asyncio.to_thread(_read_index, shadow.path / "index")
    finally:
        shadow.close()
    if tree.startswith("error: "):
        return GitState(error=tree.removeprefix("error: "), folder=folder)
    digest = hashlib.sha256(f"{head or '(no HEAD)'} {tree}".encode())
    return GitState(digest=digest.hexdigest(), folder=folder, index=index, head=head)


async def change_diff(
    workdir: Path, env: Mapping[str, str], before: GitState, base: str = ""
) -> str:
    """What the workdir's files differ by from `base` (default: HEAD at the start), new files
    included, as a unified diff ("" without a baseline commit); git runs as `git_state` runs it
    (the recorded folder, a shadow with no repository config). Raises GitError when it fails."""
    folder = before.folder
    base = base or before.head
    if folder is None or not base:
        return ""
    # No index is seeded: the baseline's names blobs of a shadow that is gone, and the
    # repository's is the agent's to write by now. Every file of the workdir is hashed.
    shadow = Shadow(folder, folder.top, base, keep_objects=False)
    try:
        if problem := await shadow.add(env, ".", cwd=workdir):
            raise GitError(f"git add failed in {workdir}: {problem}")
        args = ("diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", base, "--", ".")
        out = await shadow.must(env, *args, cwd=workdir)
    finally:
        shadow.close()
    return out.decode("utf-8", errors="replace")


def _read_index(path: Path) -> bytes:
    try:
        return path.read_bytes() if path.stat().st_size <= _INDEX_LIMIT else b""
    except OSError:
        return b""


async def _head(folder: GitFolder, env: Mapping[str, str]) -> str:
    """The commit HEAD of the recorded git folder points at, "" when it has none."""
    pinned = git_env(env, GIT_DIR=str(folder.git_dir), GIT_OPTIONAL_LOCKS="0")
    code, out, _ = await run_git(folder.top, pinned, "rev-parse", "--verify", "-q", "HEAD")
    return out.decode("ascii", errors="replace").strip() if code == 0 else ""


async def _tree(shadow: Shadow, env: Mapping[str, str], workdir: Path, seed: bytes) -> str:
    """The tree id of the work tree with the workdir's files as they are now (untracked ones
    included, ignored ones not), or `error: ...`. The blobs and trees go into the shadow's own
    object store, removed with it: the checkout's is left as it was."""
    index = shadow.path / "index"
    index.unlink(missing_ok=True)
    if seed:
        await asyncio.to_thread(index.write_bytes, seed)
    if problem := await shadow.add(env, ".", cwd=workdir):
        return f"error: git add failed: {problem.splitlines()[-1]}"
    code, out, err = await shadow.run(env, "write-tree")
    if code != 0:
        return f"error: git write-tree failed: {err.splitlines()[-1] if err else code}"
    return out.decode("ascii", errors="replace").strip()


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
