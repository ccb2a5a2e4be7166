"""runner.run.plan.samples: a repeated task's samples, their worktrees, shards and worst cost."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.errors import ConfigError
from runner.run.plan import expand_samples, shard_samples, worst_case_cost, worst_case_line
from runner.run.session import check_isolation
from runner.task import Task, load_tasks

READ_ONLY = {"tools": {"deny": ["write_to_file", "replace_in_file", "execute_command"]}}


def tasks(tmp_path: Path, *entries: dict[str, Any]) -> list[Task]:
    file = tmp_path / "t.yaml"
    file.write_text(yaml.safe_dump({"tasks": [{"prompt": "p", **e} for e in entries]}), "utf-8")
    return load_tasks([file])


def git_repository(path: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, timeout=30)


def test_a_repeated_task_becomes_k_samples_numbered_from_one(tmp_path: Path) -> None:
    once, thrice = tasks(tmp_path, {"name": "once", **READ_ONLY}, {"name": "r", "repeat": 3})
    expanded = expand_samples([once, thrice], None, None, os.environ)
    assert [(t.name, t.sample, t.of, t.label) for t in expanded] == [
        ("once", 0, 0, "once"),
        ("r", 1, 3, "r [1/3]"),
        ("r", 2, 3, "r [2/3]"),
        ("r", 3, 3, "r [3/3]"),
    ]


def test_the_repeat_flag_wins_over_the_tasks_repeat(tmp_path: Path) -> None:
    (task,) = tasks(tmp_path, {"name": "r", "repeat": 3, **READ_ONLY})
    assert len(expand_samples([task], 5, None, os.environ)) == 5
    assert expand_samples([task], 1, None, os.environ) == [task]
    with pytest.raises(ConfigError, match="--repeat 0"):
        expand_samples([task], 0, None, os.environ)


def test_samples_of_a_writing_task_in_a_git_repository_get_worktrees(tmp_path: Path) -> None:
    git_repository(tmp_path)
    writer, reader = tasks(tmp_path, {"name": "w"}, {"name": "r", **READ_ONLY})
    samples = expand_samples([writer, reader], 2, None, os.environ)
    assert [t.spec.isolation for t in samples] == ["worktree", "worktree", "none", "none"]
    check_isolation([(t, None) for t in samples], 4, None, os.environ)  # nothing shared


def test_samples_of_a_writing_task_outside_git_share_the_workdir_rule(tmp_path: Path) -> None:
    (writer,) = tasks(tmp_path, {"name": "w"})
    samples = expand_samples([writer], 2, None, os.environ)
    assert [t.spec.isolation for t in samples] == ["none", "none"]
    with pytest.raises(ConfigError, match="share the workdir"):
        check_isolation([(t, None) for t in samples], 2, None, os.environ)
    check_isolation([(t, None) for t in samples], 1, None, os.environ)


def test_shards_split_the_samples_of_one_task_and_cover_each_once(tmp_path: Path) -> None:
    (task,) = tasks(tmp_path, {"name": "r", **READ_ONLY})
    samples = expand_samples([task], 40, None, os.environ)
    shards = [shard_samples(samples, f"{k}/4") for k in range(1, 5)]
    assert sorted(t.sample for s in shards for t in s) == list(range(1, 41))
    assert all(shards), "40 samples reach every one of 4 shards"


def test_the_worst_case_cost_is_every_sample_spending_its_cost_limit(tmp_path: Path) -> None:
    capped = {"limits": {"max_cost_usd": 0.5}, **READ_ONLY}
    a, b = tasks(tmp_path, {"name": "a", **capped}, {"name": "b", "repeat": 4, **capped})
    assert worst_case_cost([a, b]) == pytest.approx(0.5 + 2.0)
    assert worst_case_cost([a, b], repeat=10) == pytest.approx(10.0)
    (free,) = tasks(tmp_path, {"name": "f", **READ_ONLY})
    assert worst_case_cost([a, free]) is None
    assert worst_case_line([a, b], repeat=10) == (
        "20 sample(s); worst case $10.00 (each at its limits.max_cost_usd)"
    )
    assert "unbounded: f set no limits.max_cost_usd" in worst_case_line([a, free], repeat=3)
