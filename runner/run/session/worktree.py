"""Git mechanics of `isolation: worktree` (DESIGN 15): make, diff and remove a task's worktree.

A task's worktree is a detached `git worktree` of its workdir's repository at HEAD, in a fresh
temporary folder, plus the checkout's uncommitted changes: tracked modifications (staged or not)
and untracked files that are not ignored. No branch or ref is created. The task's change is
`git diff --binary HEAD` of everything in the worktree (after `git add -A` in the worktree's own
index), so its patch holds the carried-over changes and the task's together, relative to HEAD:
`git apply` takes it on a clean checkout of that commit. `git add` writes blob objects into the
repository's object store; nothing refers to them, and `git gc` removes them in time.

Git runs with hooks off (`core.hooksPath=/dev/null`) and without the `GIT_DIR`-style variables that
would point it at another repository.
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

from runner.errors import ConfigError, ExitCode, RunnerError

__all__ = [
    "GitError",
    "Repository",
    "Worktree",
    "create_worktree",
    "remove_worktree",
    "repository_of",
    "task_diff",
]

_REDIRECTS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
)
_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "gc.auto=0")
_NO_GIT = "isolation: worktree needs git, and git is not installed (not on PATH)"
_locks: dict[Path, asyncio.Lock] = {}
"""One lock per repository: `git worktree add/remove` of two tasks at once race on its files."""


class GitError(RunnerError):
    """A git command the worktree needs failed (an infrastructure error, exit 4)."""

    exit_code = ExitCode.INFRASTRUCTURE


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

    @property
    def workdir(self) -> Path:
        """The task's workdir inside the worktree."""
        return self.path / self.repository.subdir


def _env(env: Mapping[str, str]) -> dict[str, str]:
    clean = {k: v for k, v in env.items() if k not in _REDIRECTS}
    clean.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return clean


async def _git(
    cwd: Path, env: Mapping[str, str], *args: str, stdin: bytes | None = None
) -> tuple[int, bytes, str]:
    """(exit code, stdout, stderr) of `git ARGS` in `cwd`."""
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *_SAFE,
            *args,
            cwd=cwd,
            env=_env(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise ConfigError(_NO_GIT) from None
    out, err = await process.communicate(stdin)
    return process.returncode or 0, out, err.decode("utf-8", errors="replace").strip()


async def _must(cwd: Path, env: Mapping[str, str], *args: str, stdin: bytes | None = None) -> bytes:
    code, out, err = await _git(cwd, env, *args, stdin=stdin)
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
            ["git", *_SAFE, *args], cwd=cwd, env=_env(env), capture_output=True, check=False
        )
    except FileNotFoundError:
        raise ConfigError(_NO_GIT) from None
    return done.returncode, done.stdout, done.stderr.decode("utf-8", errors="replace").strip()


async def create_worktree(
    repo: Repository,
    env: Mapping[str, str],
    *,
    carry: bool,
    exclude: tuple[Path, ...] = (),
    patch: Path | None = None,
) -> Worktree:
    """A fresh worktree of `repo` at its head; with `carry`, the checkout's uncommitted changes
    copied in (except files under `exclude`), then `patch` applied when given."""
    path = Path(tempfile.mkdtemp(prefix="agent-runner-worktree-"))
    async with _locks.setdefault(repo.top, asyncio.Lock()):
        await _must(repo.top, env, "worktree", "add", "--detach", "--force", str(path), repo.head)
    tree = Worktree(repo, path)
    try:
        if carry:
            await _carry_changes(repo, tree, env, exclude)
        if patch is not None and patch.stat().st_size:
            await _must(path, env, "apply", "--binary", "--whitespace=nowarn", str(patch))
    except BaseException:
        with contextlib.suppress(Exception):
            await remove_worktree(tree, env)
        raise
    return tree


async def _carry_changes(
    repo: Repository, tree: Worktree, env: Mapping[str, str], exclude: tuple[Path, ...]
) -> None:
    tracked = await _must(repo.top, env, "diff", "--binary", "HEAD")
    if tracked:
        await _must(tree.path, env, "apply", "--binary", "--whitespace=nowarn", stdin=tracked)
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
    """Everything in the worktree that differs from its head, new files included, as a patch."""
    await _must(tree.path, env, "add", "-A", "--", ".")
    return await _must(tree.path, env, "diff", "--cached", "--binary", tree.repository.head)


async def remove_worktree(tree: Worktree, env: Mapping[str, str]) -> None:
    """Remove the worktree's folder and git's record of it."""
    top = tree.repository.top
    async with _locks.setdefault(top, asyncio.Lock()):
        code, _, _ = await _git(top, env, "worktree", "remove", "-f", "-f", str(tree.path))
        if code != 0:
            shutil.rmtree(tree.path, ignore_errors=True)
        await _git(top, env, "worktree", "prune")
