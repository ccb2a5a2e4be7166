"""`success.require.changed_files` (runner.run.session.requirements): the state is read through
the runner's shadow git, so the checkout's config runs nothing and its object store stays as is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.run.session.requirements import change_diff, git_state
from tests.conftest import git
from tests.workspace.git.test_worktree import trapped

__all__ = ["trapped"]  # the fixture, shared with the worktree's tests

pytestmark = pytest.mark.anyio


def objects(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / ".git" / "objects").rglob("*")}


async def test_a_change_is_seen_and_no_program_of_the_checkouts_runs(trapped: Path) -> None:
    env = dict(os.environ, OPENAI_API_KEY="sk-secret")
    stored = objects(trapped)
    before = await git_state(trapped, env)
    assert before.error == "" and before.digest
    assert (await git_state(trapped, env, before)).digest == before.digest
    (trapped / "a.txt").write_text("changed again\n", encoding="utf-8")
    after = await git_state(trapped, env, before)
    assert after.digest != before.digest
    assert not (trapped.parent / "ran.txt").exists()
    assert objects(trapped) == stored


async def test_the_graders_change_is_read_without_running_any_program_of_the_checkout(
    trapped: Path,
) -> None:
    env = dict(os.environ, OPENAI_API_KEY="sk-secret")
    stored = objects(trapped)
    before = await git_state(trapped, env)
    (trapped / "mine.txt").write_text("the agent's\n", encoding="utf-8")
    # What the agent may write: a filter of its own, selected by every file.
    git(trapped, "config", "filter.y.clean", f"sh -c 'echo y >> {trapped.parent / 'ran.txt'}'")
    (trapped / ".gitattributes").write_text("* filter=y diff=y\n", encoding="utf-8")
    diff = await change_diff(trapped, env, before)
    assert not (trapped.parent / "ran.txt").exists()
    assert objects(trapped) == stored
    assert "+++ b/mine.txt\n@@ -0,0 +1 @@\n+the agent's" in diff
    # Against HEAD at the start: the changes from before the task show too.
    assert "+uncommitted" in diff and "+++ b/new.txt" in diff


async def test_no_change_is_read_without_a_baseline_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    before = await git_state(tmp_path, dict(os.environ))
    assert await change_diff(tmp_path, dict(os.environ), before) == ""
