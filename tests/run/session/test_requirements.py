"""`success.require.changed_files` (runner.run.session.requirements): the state is read through
the runner's shadow git, so the checkout's config runs nothing and its object store stays as is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.run.session.requirements import git_state
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
