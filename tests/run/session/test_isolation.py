"""runner.run.session.isolation: who may share a workdir, patch names, what resume trusts of a
header."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.errors import ConfigError
from runner.run.session.isolation import (
    check_isolation,
    isolation_of,
    parent_worktree,
    patch_name,
    write_reason,
)
from runner.task import Task, load_tasks

HEAD = "a" * 40
READ_ONLY = {"tools": {"deny": ["write_to_file", "replace_in_file", "execute_command"]}}


def tasks(tmp_path: Path, *entries: dict[str, Any]) -> list[Task]:
    for entry in entries:
        (tmp_path / entry.get("workdir", ".")).mkdir(parents=True, exist_ok=True)
    file = tmp_path / "t.yaml"
    suite = {"tasks": [{"prompt": "p", **entry} for entry in entries]}
    file.write_text(yaml.safe_dump(suite), encoding="utf-8")
    return load_tasks([file])


def test_a_task_is_read_only_when_every_write_tool_is_denied(tmp_path: Path) -> None:
    writer, reader, other = tasks(
        tmp_path,
        {"name": "w"},
        {"name": "r", **READ_ONLY},
        {"name": "o", **READ_ONLY, "extensions": {"fs": {"type": "stdio", "cmd": "true"}}},
    )
    assert write_reason(writer) == "allows write_to_file, replace_in_file, execute_command"
    assert write_reason(reader) is None
    assert write_reason(other) == "has MCP server(s) fs, whose tools may write"


def test_nested_workdirs_are_shared_too(tmp_path: Path) -> None:
    loaded = tasks(tmp_path, {"name": "outer", "workdir": "w"}, {"name": "inner", "workdir": "w/s"})
    pairs = [(task, None) for task in loaded]
    with pytest.raises(ConfigError, match=r"'outer'.*'inner'.*isolation: worktree"):
        check_isolation(pairs, 2, None, os.environ)
    check_isolation(pairs, 1, None, os.environ)  # one at a time: nothing shared at once


def test_one_writer_and_one_reader_may_not_share(tmp_path: Path) -> None:
    loaded = tasks(tmp_path, {"name": "w"}, {"name": "r", **READ_ONLY})
    with pytest.raises(ConfigError, match="'w' allows") as caught:
        check_isolation([(task, None) for task in loaded], 2, None, os.environ)
    assert "'r' allows" not in str(caught.value)


def test_separate_workdirs_may_run_at_once(tmp_path: Path) -> None:
    loaded = tasks(tmp_path, {"name": "a", "workdir": "a"}, {"name": "b", "workdir": "b"})
    check_isolation([(task, None) for task in loaded], 2, None, os.environ)


def test_isolation_comes_from_the_flag_then_the_parent_then_the_task(tmp_path: Path) -> None:
    (task,) = tasks(tmp_path, {"name": "t"})
    parent = {"head": HEAD, "patch": ""}
    assert isolation_of(task, None, None) == "none"
    assert isolation_of(task, None, parent) == "worktree"
    assert isolation_of(task, "none", parent) == "none"
    assert isolation_of(task, "worktree", None) == "worktree"


@pytest.mark.parametrize(
    ("name", "file"),
    [("fix/lint", "fix_lint.patch"), ("..x", "x.patch"), ("a b*c", "a_b_c.patch")],
)
def test_patch_names_are_plain_file_names(name: str, file: str) -> None:
    assert patch_name(name) == file


def header(isolation: object) -> dict[str, Any]:
    return {"checkout": {"root": "/r", "task_file": "t.yaml", "workdir": "w", **isolation}}  # type: ignore[dict-item]


def test_resume_finds_the_patch_beside_the_sessions_folder(tmp_path: Path) -> None:
    log = tmp_path / "out" / "sessions" / "s.jsonl"
    (tmp_path / "out" / "patches").mkdir(parents=True)
    (tmp_path / "out" / "patches" / "t.patch").write_text("diff\n", encoding="utf-8")
    record = {"isolation": {"mode": "worktree", "head": HEAD, "patch": "patches/t.patch"}}
    assert parent_worktree(header(record), log) == {
        "head": HEAD,
        "snapshot": "",
        "patch": str(tmp_path / "out" / "patches" / "t.patch"),
    }
    gone = {"isolation": {"mode": "worktree", "head": HEAD, "patch": "patches/none.patch"}}
    assert parent_worktree(header(gone), log) == {"head": HEAD, "snapshot": "", "patch": ""}
    snapshot = "b" * 40
    record["isolation"]["snapshot"] = snapshot
    assert parent_worktree(header(record), log)["snapshot"] == snapshot  # type: ignore[index]
    assert parent_worktree(header({}), log) is None


@pytest.mark.parametrize(
    "record",
    [
        {"mode": "worktree", "head": "--upload-pack=evil", "patch": "patches/t.patch"},
        {"mode": "worktree", "head": HEAD, "patch": "../../etc/passwd"},
        {"mode": "worktree", "head": HEAD, "patch": "patches/../../x.patch"},
        {"mode": "worktree", "head": HEAD, "patch": "/etc/passwd"},
        {"mode": "worktree", "head": HEAD, "snapshot": "--orphan", "patch": "patches/t.patch"},
    ],
)
def test_an_edited_header_is_refused(tmp_path: Path, record: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="edited or damaged"):
        parent_worktree(header({"isolation": record}), tmp_path / "s.jsonl")


def test_a_log_from_before_the_isolation_field_is_not_drift(tmp_path: Path) -> None:
    """A field added since the log was written (here `isolation`), at its default, is not
    reported as drift on resume; set to something else, it is."""
    import json

    from runner.redact import Redactor
    from runner.run.resume.task import _warn_on_drift
    from runner.sessionlog import SessionRecord
    from runner.settings import Settings
    from runner.workspace.git.checkout import Located

    (task,) = tasks(tmp_path, {"name": "t"})
    old = json.loads(json.dumps(Redactor().data(task.record())))
    del old["isolation"]
    located = Located(root=tmp_path, recorded_root=str(tmp_path), task_file=None, workdir=None)
    said: list[str] = []
    record = SessionRecord(tmp_path / "s.jsonl", {"task": old}, [], None)
    _warn_on_drift(record, located, task, Settings(), said.append)
    assert said == []
    record = SessionRecord(
        tmp_path / "s.jsonl", {"task": {**old, "isolation": "worktree"}}, [], None
    )
    _warn_on_drift(record, located, task, Settings(), said.append)
    assert len(said) == 1 and "isolation" in said[0]


def test_a_writer_after_readers_is_named_with_the_first_reader_it_meets(tmp_path: Path) -> None:
    loaded = tasks(
        tmp_path, {"name": "r0", **READ_ONLY}, {"name": "r1", **READ_ONLY}, {"name": "w2"}
    )
    with pytest.raises(ConfigError, match=r"tasks 'r0' \(.*\) and 'w2' \(.*'w2' allows"):
        check_isolation([(task, None) for task in loaded], 3, None, os.environ)


def test_each_task_is_judged_once_however_many_share_a_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pairwise judging made a suite of N read-only tasks cost N * (N - 1) policy checks.
    import runner.run.session.isolation as isolation

    judged: list[str] = []

    def counting(task: Task) -> str | None:
        judged.append(task.name)
        return write_reason(task)

    monkeypatch.setattr(isolation, "write_reason", counting)
    loaded = tasks(tmp_path, *({"name": f"r{i}", **READ_ONLY} for i in range(200)))
    check_isolation([(task, None) for task in loaded], 200, None, os.environ)
    assert sorted(judged) == sorted(task.name for task in loaded)
