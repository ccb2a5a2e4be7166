"""A session's paths are recorded relative to its checkout and found again in another one."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.workspace.git.checkout import checkout_record, locate_in_checkout


def repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "tasks").mkdir()
    (root / "src").mkdir()
    return root.resolve()


def test_the_record_is_relative_to_the_git_work_tree_holding_the_task_file(tmp_path: Path) -> None:
    root = repo(tmp_path / "a")
    record = checkout_record(root / "tasks" / "t.yaml", root / "src", cwd=tmp_path)
    assert record == {"root": str(root), "task_file": "tasks/t.yaml", "workdir": "src"}


def test_outside_a_repository_the_working_folder_is_the_root(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    record = checkout_record(tmp_path / "t.yaml", Path("/"), cwd=tmp_path)
    assert record == {"root": str(tmp_path.resolve()), "task_file": "t.yaml", "workdir": None}


def test_paths_are_found_under_the_checkout_holding_the_current_folder(tmp_path: Path) -> None:
    root = repo(tmp_path / "b")
    header = {"checkout": {"root": "/ci/a", "task_file": "tasks/t.yaml", "workdir": "src"}}
    located = locate_in_checkout(header, Path("l.jsonl"), cwd=root / "src")
    assert (located.root, located.recorded_root) == (root, "/ci/a")
    assert (located.task_file, located.workdir) == (root / "tasks" / "t.yaml", root / "src")


def test_a_log_without_checkout_is_read_through_its_cwd(tmp_path: Path) -> None:
    root = repo(tmp_path / "b")
    header = {
        "task_file": "/ci/a/tasks/t.yaml",
        "task": {"workdir": "/ci/a/src"},
        "host": {"cwd": "/ci/a"},
    }
    located = locate_in_checkout(header, Path("l.jsonl"), cwd=root)
    assert (located.task_file, located.workdir) == (root / "tasks" / "t.yaml", root / "src")


@pytest.mark.parametrize("task_file", ["../a/t.yaml", "/etc/t.yaml", "tasks/../../t.yaml"])
def test_a_task_file_outside_the_checkout_is_refused(tmp_path: Path, task_file: str) -> None:
    root = repo(tmp_path / "b")
    header = {"checkout": {"root": "/ci/a", "task_file": task_file, "workdir": "src"}}
    with pytest.raises(ConfigError, match="outside the checkout"):
        locate_in_checkout(header, Path("l.jsonl"), cwd=root)


def test_a_workdir_outside_the_checkout_is_left_out_with_the_reason(tmp_path: Path) -> None:
    root = repo(tmp_path / "b")
    (root / "src" / "up").symlink_to(tmp_path)
    header = {"checkout": {"root": "/ci/a", "task_file": "t.yaml", "workdir": "src/up"}}
    located = locate_in_checkout(header, Path("l.jsonl"), cwd=root)
    assert located.workdir is None and "outside the checkout" in located.workdir_problem
