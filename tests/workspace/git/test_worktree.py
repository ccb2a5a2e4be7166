"""A task's worktree and patch (runner.workspace.git.worktree): the repository's programs never run.

A checkout's `.git/config` may hold what an earlier task in place wrote there: a clean filter,
an fsmonitor, a hook. Making the worktree, snapshotting it and diffing it run none of them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.workspace.git.worktree import (
    create_worktree,
    remove_worktree,
    repository_of,
    task_diff,
)
from tests.conftest import git

pytestmark = pytest.mark.anyio


@pytest.fixture
def trapped(tmp_path: Path) -> Path:
    """A repository with uncommitted changes whose config runs `ran.txt`-writing programs."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("committed\n", encoding="utf-8")
    (root / ".gitattributes").write_text("* filter=x diff=x\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    trap = f"sh -c 'echo $0 >> {tmp_path / 'ran.txt'}; cat'"
    for key in ("filter.x.clean", "filter.x.smudge", "diff.x.textconv", "core.fsmonitor"):
        git(root, "config", key, trap)
    hooks = root / ".git" / "hooks"
    (hooks / "post-checkout").write_text(f"#!/bin/sh\n{trap}\n", encoding="utf-8")
    (hooks / "post-checkout").chmod(0o755)
    (root / "a.txt").write_text("uncommitted\n", encoding="utf-8")
    (root / "new.txt").write_text("untracked\n", encoding="utf-8")
    return root


async def test_no_program_of_the_repositorys_runs_and_the_patch_is_the_tasks(
    trapped: Path,
) -> None:
    env = dict(os.environ, OPENAI_API_KEY="sk-secret")
    repo = repository_of(trapped, env)
    tree = await create_worktree(repo, env, carry=True)
    try:
        assert (tree.workdir / "a.txt").read_text(encoding="utf-8") == "uncommitted\n"
        assert git(trapped, "show", f"{tree.snapshot}:new.txt") == "untracked\n"
        (tree.workdir / "mine.txt").write_text("mine\n", encoding="utf-8")
        patch = await task_diff(tree, env)
    finally:
        await remove_worktree(tree, env)
    assert not (trapped.parent / "ran.txt").exists()
    assert b"mine.txt" in patch and b"a.txt" not in patch and b"new.txt" not in patch
    assert git(trapped, "worktree", "list", "--porcelain").count("worktree ") == 1
