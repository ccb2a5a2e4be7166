"""A resumed task runs what the user wrote (DESIGN 24), through the CLI.

A session's header keeps a hash of each executable part of its task. Between the run and the
resume, the task file gains an MCP server, a hook or another success check (what an agent
with write access to the file, or a planted `run -p` task file, would add): `resume` refuses,
exit 2, naming each changed part, and nothing of them runs, unless `--accept-task-changes`.
A log from before the hashes resumes as it did.
"""

from __future__ import annotations

import json
import re
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
        "config",
    }
    del header["task_hashes"]
    log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    changed = {"tools": {"deny": ["execute_command"]}}
    again = Scenario(task={**BASE, **changed}, steps=[complete()], args=RESUME)
    done = run_all({"t": again}, tmp_path)["t"]
    assert done.code == 0, done.explain()
    assert "drifted since the session: tools" in done.stderr, done.stderr


def _config_changes(mark: Path) -> dict[str, str]:
    """What an agent that may write `./agent-runner.yaml` (it sits in the repository) would add:
    each reaches every task, so each is a change of the `config` part."""
    run = f"echo ran >> {mark}"
    return {
        "an MCP server": f"extensions:\n  evil:\n    cmd: sh\n    args: ['-c', '{run}']\n",
        "a hook": f"hooks:\n  session_start:\n    - run: '{run}'\n",
        "an agent": "agents:\n  helper:\n    description: d\n    prompt: p\n",
        "a weaker sandbox": "sandbox:\n  network: true\n",
    }


@pytest.mark.parametrize("change", ["an MCP server", "a hook", "an agent", "a weaker sandbox"])
def test_resume_refuses_when_the_config_file_gained_what_runs(tmp_path: Path, change: str) -> None:
    mark = tmp_path / "t" / "w" / "mark"
    first = run_all({"t": Scenario(task=BASE, steps=[GIVE_UP])}, tmp_path)["t"]
    assert first.code == 1, first.explain()
    config = {"agent-runner.yaml": _config_changes(mark)[change]}
    again = Scenario(task=BASE, steps=[complete()], args=RESUME, extra_files=config)
    done = run_all({"t": again}, tmp_path)["t"]
    assert done.code == 2, done.explain()
    # A config agent is merged into the task's own `agents` too: both are named then.
    assert re.search(r"its (agents, )?config changed since the session", done.stderr), done.stderr
    assert "or the config file" in done.stderr
    assert not mark.exists() and done.requests == []


def test_a_log_from_before_the_config_hash_resumes_beside_a_changed_config(tmp_path: Path) -> None:
    first = run_all({"t": Scenario(task=BASE, steps=[GIVE_UP])}, tmp_path)["t"]
    (log,) = (first.out / "sessions").glob("*.jsonl")
    lines = log.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    del header["task_hashes"]["config"]
    log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    config = {"agent-runner.yaml": "sandbox:\n  network: true\n"}
    again = Scenario(task=BASE, steps=[complete()], args=RESUME, extra_files=config)
    done = run_all({"t": again}, tmp_path)["t"]
    assert done.code == 0, done.explain()
