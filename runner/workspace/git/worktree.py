"""Git mechanics of `isolation: worktree` (DESIGN 15, 18): make, diff and remove a task's worktree.

Before the task starts, the runner snapshots its workdir's checkout as a commit of its own
(`snapshot`, HEAD as its parent, no ref): HEAD plus the uncommitted changes, tracked
modifications (staged or not) and untracked files that are not ignored, but the run's artifacts
folder. The task's worktree is a detached `git worktree` at that commit, in a fresh temporary
folder. The task's change is the difference between the snapshot and the worktree at the end,
limited to the task's workdir: a task that changed nothing leaves no patch, the carried-over
changes are in no patch, and `git apply` takes the patch on the original checkout as it is,
uncommitted changes included. The snapshot's objects stay in the repository's object store
(nothing refers to them; `git gc` removes them in time), so resume on that checkout starts from
the snapshot again.

Every `add`, `read-tree`, `apply`, `diff` and commit runs in a `Shadow`
(`runner.workspace.git.gitsafe`): the minimal environment, the git folder recorded before the
agent ran, no repository config, so no filter, hook or fsmonitor of the repository's runs, at the
start (a checkout an earlier task in place may have written) or the end. The commands that run
with the repository's own config (rev-parse, `worktree add --no-checkout`, `worktree prune`)
run no such program either, and get the same environment and options."""

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
from runner.workspace.git.gitsafe import (
    GIT_TIMEOUT_S,
    SAFE_CONFIG,
    GitError,
    Shadow,
    git_env,
    record_folder,
    run_git,
)

__all__ = [
    "WORKTREE_PREFIX",
    "GitError",
    "Repository",
    "Worktree",
    "create_worktree",
    "remove_worktree",
    "repository_of",
    "task_diff",
]

WORKTREE_PREFIX = "agent-runner-worktree-"
"""The runner's worktrees' folder names, and so their git folders' under `worktrees/`."""
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
    """The runner's git folder over it (see `runner.workspace.git.gitsafe`)."""
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
    """A fresh worktree of `repo`. With `carry`, at a snapshot of the checkout as it is (HEAD
    plus its uncommitted changes, but files under `exclude`); else at `snapshot` (a resumed
    session's start) when the repository has it, or at its head. Then `patch` applied."""
    if carry:
        start = await _snapshot_checkout(repo, env, exclude)
    elif snapshot and await _has_commit(repo, env, snapshot):
        start = snapshot
    else:
        start = repo.head
    path = Path(tempfile.mkdtemp(prefix=WORKTREE_PREFIX))
    async with _locks.setdefault(repo.top, asyncio.Lock()):
        await _must(
            repo.top,
            env,
            "worktree",
            "add",
            "--detach",
            "--force",
            "--no-checkout",
            str(path),
            start,
        )
    folder = await asyncio.to_thread(record_folder, path, env)
    if folder is None:
        await _remove(repo.top, path, env)
        raise GitError(f"git worktree add made no git work tree in {path}")
    shadow = Shadow(folder, path, start)
    tree = Worktree(repo, path, shadow, start)
    try:
        # The checkout, by the shadow: no smudge filter or hook of the repository's runs. Its
        # index, file times and all, becomes the worktree's own, for the agent's git.
        await shadow.must(env, "read-tree", "-u", "--reset", start)
        await asyncio.to_thread(shutil.copyfile, shadow.path / "index", folder.git_dir / "index")
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


async def _snapshot_checkout(
    repo: Repository, env: Mapping[str, str], exclude: tuple[Path, ...]
) -> str:
    """Commit the checkout as it is, HEAD as the parent: `git add -A` (but `exclude`) into a
    shadow index seeded from the checkout's own, then `write-tree` and `commit-tree`."""
    folder = await asyncio.to_thread(record_folder, repo.top, env)
    if folder is None:
        raise GitError(f"{repo.top} is no longer a git work tree")
    shadow = Shadow(folder, repo.top, repo.head)
    skip = [
        f":(top,exclude){out.relative_to(repo.top).as_posix()}"
        for out in exclude
        if out.is_relative_to(repo.top) and out != repo.top
    ]
    try:
        # Seeded from the checkout's index, git hashes only the files whose times changed; an
        # index the shadow cannot read (a split index) is replaced by HEAD's tree.
        with contextlib.suppress(OSError):
            await asyncio.to_thread(
                shutil.copyfile, folder.git_dir / "index", shadow.path / "index"
            )
        if await shadow.add(env, ":(top)", *skip):
            await shadow.must(env, "read-tree", repo.head)
            if problem := await shadow.add(env, ":(top)", *skip):
                raise GitError(f"git add failed in {repo.top}: {problem}")
        found = (await shadow.must(env, "write-tree")).decode().strip()
        message = b"agent-runner: the task's starting state (HEAD plus uncommitted changes)\n"
        commit = await shadow.must(env, "commit-tree", found, "-p", repo.head, stdin=message)
    finally:
        shadow.close()
    return commit.decode().strip()


async def task_diff(tree: Worktree, env: Mapping[str, str]) -> bytes:
    """What the task changed in its workdir since the snapshot, new files included, as a patch
    with paths relative to the repository's top."""
    where = tree.repository.subdir.as_posix()
    if problem := await tree.shadow.add(env, where):
        raise GitError(f"git add failed in {tree.path}: {problem}")
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
