"""Git mechanics of `isolation: worktree` (DESIGN 15, 18): make, diff and remove a task's worktree.

A task's worktree is a detached `git worktree` of its workdir's repository, in a fresh temporary
folder, plus the checkout's uncommitted changes: tracked modifications (staged or not) and
untracked files that are not ignored. No branch or ref is created. Before the task starts, the
runner snapshots that starting state as a commit of its own (HEAD as parent; `snapshot`). The
task's change is the difference between the snapshot and the worktree at the end, limited to the
task's workdir: a task that changed nothing leaves no patch, the carried-over changes are in no
patch, and `git apply` takes the patch on the original checkout as it is, uncommitted changes
included. The snapshot's objects stay in the repository's object store (nothing refers to them;
`git gc` removes them in time), so resume on that checkout starts from the snapshot again.

Every git command that reads the worktree after the agent could write it runs in a `Shadow`
(`runner.run.session.gitsafe`): the minimal environment, the git folder recorded at creation,
no repository config. The commands on the original checkout (rev-parse, worktree add/remove,
the carried-over diff) run before the agent starts, with the same environment and options.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.errors import ConfigError
from runner.run.session.gitsafe import (
    GIT_TIMEOUT_S,
    SAFE_CONFIG,
    GitError,
    Shadow,
    git_env,
    record_folder,
    run_git,
)

__all__ = [
    "GitError",
    "Repository",
    "Worktree",
    "create_worktree",
    "remove_worktree",
    "repository_of",
    "task_diff",
]

_NO_GIT = "isolation: worktree needs git, and git is not installed (not on PATH)"
_DIFF = ("--binary", "--no-ext-diff", "--no-textconv", "--no-color")
_locks: dict[Path, asyncio.Lock] = {}
"""One lock per repository: `git worktree add/remove` of two tasks at once race on its files."""


@dataclass(frozen=True)
class Repository:
    """Where a workdir sits in its repository."""

    top: Path
    """The work tree's top folder (`git rev-parse --show-toplevel`)."""
    head: str
    """The commit HEAD points at."""
    subdir: Path
    """The workdir relative to `top` (`.` for the top itself)."""


@dataclass(frozen=True)
class Worktree:
    """A task's worktree."""

    repository: Repository
    path: Path
    """The worktree's top folder."""
    shadow: Shadow
    """The runner's git folder over it (see `runner.run.session.gitsafe`)."""
    snapshot: str
    """The commit of the task's starting state (HEAD plus the carried-over changes)."""

    @property
    def workdir(self) -> Path:
        """The task's workdir inside the worktree."""
        return self.path / self.repository.subdir


async def _must(cwd: Path, env: Mapping[str, str], *args: str, stdin: bytes | None = None) -> bytes:
    code, out, err = await run_git(cwd, git_env(env), *args, stdin=stdin)
    if code != 0:
        raise GitError(f"git {' '.join(args[:2])} failed in {cwd}: {err or f'exit {code}'}")
    return out


def repository_of(workdir: Path, env: Mapping[str, str], head: str | None = None) -> Repository:
    """The repository holding `workdir`, at `head` (default: HEAD). ConfigError (exit 2) when
    there is none, it has no commit yet, or `head` is not one of its commits. Runs before the
    tasks start, so it may block."""
    code, out, err = _git_now(workdir, env, "rev-parse", "--show-toplevel")
    if code != 0:
        reason = err.splitlines()[-1] if err else f"git exit {code}"
        raise ConfigError(
            f"isolation: worktree: workdir {workdir} is not in a git repository ({reason}); "
            "run `git init` and commit there, or use isolation: none"
        )
    top = Path(out.decode("utf-8", errors="replace").strip()).resolve()
    wanted = head or "HEAD"
    code, out, _ = _git_now(workdir, env, "rev-parse", "--verify", "-q", f"{wanted}^{{commit}}")
    if code != 0:
        if head is None:
            raise ConfigError(
                f"isolation: worktree: the repository {top} has no commit yet (HEAD is unborn); "
                "a worktree starts from a commit: commit once (git commit --allow-empty -m init)"
            )
        raise ConfigError(
            f"isolation: worktree: commit {head} (where the session started) is not in {top}; "
            "fetch it (git fetch --unshallow) or resume in a clone that has it"
        )
    return Repository(top, out.decode().strip(), workdir.resolve().relative_to(top))


def _git_now(cwd: Path, env: Mapping[str, str], *args: str) -> tuple[int, bytes, str]:
    try:
        done = subprocess.run(
            ["git", *SAFE_CONFIG, *args],
            cwd=cwd,
            env=git_env(env),
            capture_output=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise ConfigError(_NO_GIT) from None
    except subprocess.TimeoutExpired:
        return -1, b"", f"git {args[0]} took over {GIT_TIMEOUT_S:g}s"
    return done.returncode, done.stdout, done.stderr.decode("utf-8", errors="replace").strip()


async def create_worktree(
    repo: Repository,
    env: Mapping[str, str],
    *,
    carry: bool,
    exclude: tuple[Path, ...] = (),
    patch: Path | None = None,
    snapshot: str | None = None,
) -> Worktree:
    """A fresh worktree of `repo` at `snapshot` (a resumed session's start; default: its head).
    With `carry`, the checkout's uncommitted changes copied in (except files under `exclude`)
    and the result snapshotted; then `patch` applied when given."""
    path = Path(tempfile.mkdtemp(prefix="agent-runner-worktree-"))
    start = snapshot if snapshot and await _has_commit(repo, env, snapshot) else repo.head
    async with _locks.setdefault(repo.top, asyncio.Lock()):
        await _must(repo.top, env, "worktree", "add", "--detach", "--force", str(path), start)
    folder = await asyncio.to_thread(record_folder, path, env)
    if folder is None:
        await _remove(repo.top, path, env)
        raise GitError(f"git worktree add made no git work tree in {path}")
    shadow = Shadow(folder, path, start)
    tree = Worktree(repo, path, shadow, start)
    try:
        await shadow.must(env, "read-tree", start)
        if carry:
            await _carry_changes(repo, tree, env, exclude)
            tree = Worktree(repo, path, shadow, await _snapshot(tree, env))
        if patch is not None and patch.stat().st_size:
            await shadow.must(env, "apply", "--binary", "--whitespace=nowarn", str(patch))
    except BaseException:
        with contextlib.suppress(Exception):
            await remove_worktree(tree, env)
        raise
    return tree


async def _has_commit(repo: Repository, env: Mapping[str, str], commit: str) -> bool:
    code, _, _ = await run_git(
        repo.top, git_env(env), "rev-parse", "--verify", "-q", f"{commit}^{{commit}}"
    )
    return code == 0


async def _snapshot(tree: Worktree, env: Mapping[str, str]) -> str:
    """Commit the worktree as it is (before the agent runs), HEAD as its parent."""
    shadow, head = tree.shadow, tree.repository.head
    await shadow.must(env, "add", "-A", "--", ".")
    found = (await shadow.must(env, "write-tree")).decode().strip()
    message = b"agent-runner: the task's starting state (HEAD plus uncommitted changes)\n"
    commit = await shadow.must(env, "commit-tree", found, "-p", head, stdin=message)
    return commit.decode().strip()


async def _carry_changes(
    repo: Repository, tree: Worktree, env: Mapping[str, str], exclude: tuple[Path, ...]
) -> None:
    tracked = await _must(repo.top, env, "diff", *_DIFF, "HEAD")
    if tracked:
        await tree.shadow.must(env, "apply", "--binary", "--whitespace=nowarn", stdin=tracked)
    listed = await _must(repo.top, env, "ls-files", "--others", "--exclude-standard", "-z")
    names = filter(None, listed.decode("utf-8", errors="surrogateescape").split("\0"))
    # Copies off the event loop: a checkout may hold many untracked files.
    await asyncio.to_thread(_copy_untracked, repo.top, tree.path, list(names), exclude)


def _copy_untracked(top: Path, into: Path, names: list[str], exclude: tuple[Path, ...]) -> None:
    for name in names:
        source = top / name
        if any(source.is_relative_to(folder) for folder in exclude):
            continue  # the run's own artifacts folder, when it lies inside the checkout
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        elif source.is_file():
            shutil.copy2(source, target)


async def task_diff(tree: Worktree, env: Mapping[str, str]) -> bytes:
    """What the task changed in its workdir since the snapshot, new files included, as a patch
    with paths relative to the repository's top."""
    where = tree.repository.subdir.as_posix()
    await tree.shadow.must(env, "add", "-A", "--", where)
    return await tree.shadow.must(env, "diff", "--cached", *_DIFF, tree.snapshot, "--", where)


async def remove_worktree(tree: Worktree, env: Mapping[str, str]) -> None:
    """Remove the worktree's folder, git's record of it, and the runner's shadow git folder."""
    tree.shadow.close()
    await _remove(tree.repository.top, tree.path, env)


async def _remove(top: Path, path: Path, env: Mapping[str, str]) -> None:
    # The folder goes first, by the runner's own hand: `git worktree remove` would read the
    # worktree's `.git` file, which the agent may have pointed anywhere. Then `prune` drops
    # git's record of a worktree whose folder is gone.
    await asyncio.to_thread(shutil.rmtree, path, True)
    async with _locks.setdefault(top, asyncio.Lock()):
        await run_git(top, git_env(env), "worktree", "prune")
