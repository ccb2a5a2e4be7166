"""Turning session logs into the jobs of `resume` (runner.run.resume): which logs become jobs,
which are refused, and the message a resumed session starts from."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.outcome import Totals
from runner.redact import Redactor
from runner.run.plan import RunOptions
from runner.run.resume import default_message, resumed_jobs
from runner.sessionlog import SessionLogWriter, read_session
from runner.settings import Settings


def _log(out: Path, name: str, *, parent: str | None = None) -> SessionLogWriter:
    header = {
        "session_id": f"20260101T000000Z-{name}-a1b2c3",
        "run_id": "run-1",
        "runner_version": "0.0.0",
        "task": {"name": name},
        "task_file": "tasks/t.yaml",
        "model": "replay:none",
        "system_prompt": "# ROLE\nYou test.\n",
        "tools": [],
        "tool_mode": "xml",
    }
    if parent is not None:
        header["parent_session_id"] = parent
    return SessionLogWriter.create(out, header, Redactor())


def _args() -> Namespace:
    return Namespace(workdir=None, params={}, from_log=False, model=None, message=None)


def _options(tmp_path: Path) -> RunOptions:
    return RunOptions(out=tmp_path / "out", junit=None)


def test_a_folder_whose_sessions_all_passed_gives_no_job(tmp_path: Path) -> None:
    for name in ("one", "two"):
        log = _log(tmp_path / "runs", name)
        log.end("passed", "completed", Totals(), "done")
    jobs = resumed_jobs([str(tmp_path / "runs")], _args(), Settings(), _options(tmp_path))
    assert jobs == []


def test_a_sub_agents_log_is_refused_naming_its_parent(tmp_path: Path) -> None:
    child = _log(tmp_path, "child", parent="20260101T000000Z-parent-a1b2c3")
    child.end("failed", "gave up", Totals())
    with pytest.raises(ConfigError, match=r"a sub-agent's session; resume its parent 20260101T"):
        resumed_jobs([str(child.path)], _args(), Settings(), _options(tmp_path))


def test_a_path_that_is_neither_log_nor_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.jsonl: no such session log or directory"):
        resumed_jobs([str(tmp_path / "missing.jsonl")], _args(), Settings(), _options(tmp_path))


def test_the_default_message_says_why_the_last_run_stopped(tmp_path: Path) -> None:
    cut = _log(tmp_path, "cut")
    ended = _log(tmp_path, "ended")
    ended.end("budget_exceeded", "turn limit reached (3/3)", Totals())
    cut_message = default_message(read_session(cut.path))
    ended_message = default_message(read_session(ended.path))
    assert "was cut off before it finished" in cut_message
    assert "ended as budget_exceeded: turn limit reached (3/3)" in ended_message
    for message in (cut_message, ended_message):
        assert message.endswith("then finish the work and call attempt_completion.")
