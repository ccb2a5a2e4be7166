"""A resumed task runs what the user wrote (DESIGN 24), through the CLI.

A session's header keeps a hash of each executable part of its task. Between the run and the
resume, the task file gains an MCP server, a hook or another success check (what an agent
with write access to the file, or a planted `run -p` task file, would add): `resume` refuses,
exit 2, naming each changed part, and nothing of them runs, unless `--accept-task-changes`.
A log from before the hashes resumes as it did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import MODEL, Done, Scenario, call, complete, run_all
from tests.fakes.model_server import reply

GIVE_UP = reply(call("attempt_completion", result="cannot", status="failure"))
RESUME = ["resume", "OUT", "--model", MODEL, "--out", "OUT"]
BASE: dict[str, Any] = {"prompt": "Do it.", "workdir": "w", "success": {"check": "true"}}


def _changes(mark: Path) -> dict[str, dict[str, Any]]:
    run = f"echo ran >> {mark}"
    return {
        "extensions": {"extensions": {"evil": {"cmd": "sh", "args": ["-c", run]}}},
        "hooks": {"hooks": {"session_start": [{"run": run}]}},
        "success": {"success": {"check": run}},
    }


def _run_then_resume(base: Path, changed: dict[str, Any], *flags: str) -> tuple[Done, Done]:
    first = run_all({"t": Scenario(task=BASE, steps=[GIVE_UP])}, base)["t"]
    assert first.code == 1, first.explain()
    again = Scenario(task={**BASE, **changed}, steps=[complete()], args=[*RESUME, *flags])
    return first, run_all({"t": again}, base)["t"]


@pytest.mark.parametrize("part", ["extensions", "hooks", "success"])
def test_resume_refuses_a_task_whose_executable_part_changed(tmp_path: Path, part: str) -> None:
    mark = tmp_path / "t" / "w" / "mark"  # in the workdir: hooks run in the sandbox
    _, done = _run_then_resume(tmp_path, _changes(mark)[part])
    assert done.code == 2, done.explain()
    assert f"its {part} changed since the session" in done.stderr, done.stderr
    assert "--accept-task-changes" in done.stderr
    assert not mark.exists() and done.requests == []


def test_resume_names_every_changed_part_at_once(tmp_path: Path) -> None:
    mark = tmp_path / "t" / "w" / "mark"  # in the workdir: hooks run in the sandbox
    every: dict[str, Any] = {}
    for change in _changes(mark).values():
        every.update(change)
    _, done = _run_then_resume(tmp_path, every)
    assert done.code == 2, done.explain()
    assert "its extensions, hooks, success changed" in done.stderr, done.stderr
    assert not mark.exists()


def test_resume_runs_a_changed_task_when_the_changes_are_accepted(tmp_path: Path) -> None:
    mark = tmp_path / "t" / "w" / "mark"  # in the workdir: hooks run in the sandbox
    _, done = _run_then_resume(tmp_path, _changes(mark)["hooks"], "--accept-task-changes")
    assert done.code == 0, done.explain()
    assert mark.read_text(encoding="utf-8") == "ran\n"


def test_resume_of_an_unchanged_task_needs_no_flag(tmp_path: Path) -> None:
    _, done = _run_then_resume(tmp_path, {"description": "only words changed"})
    assert done.code == 0, done.explain()


def test_a_log_from_before_the_hashes_resumes_with_a_drift_warning(tmp_path: Path) -> None:
    first = run_all({"t": Scenario(task=BASE, steps=[GIVE_UP])}, tmp_path)["t"]
    (log,) = (first.out / "sessions").glob("*.jsonl")
    lines = log.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert set(header["task_hashes"]) == set(_changes(tmp_path).keys()) | {
        "sandbox",
        "permissions",
        "tools",
        "agents",
        "skills",
    }
    del header["task_hashes"]
    log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    changed = {"tools": {"deny": ["execute_command"]}}
    again = Scenario(task={**BASE, **changed}, steps=[complete()], args=RESUME)
    done = run_all({"t": again}, tmp_path)["t"]
    assert done.code == 0, done.explain()
    assert "drifted since the session: tools" in done.stderr, done.stderr
