"""`resume --latest` (runner.run.resume.latest): the sessions of the newest run under --out."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.outcome import Totals
from runner.redact import Redactor
from runner.run.resume import latest_run_logs
from runner.sessionlog import SessionLogWriter


def _session(out: Path, run: str, name: str, status: str | None, **extra: str) -> Path:
    header = {
        "session_id": f"{run}-{name}",
        "run_id": run,
        "runner_version": "0.0.0",
        "task": {"name": name},
        "model": "replay:none",
        "system_prompt": "# ROLE\nYou test.\n",
        "tools": [],
        "started_at": f"2026-01-0{run[-1]}T00:00:00Z",
        **extra,
    }
    log = SessionLogWriter.create(out, header, Redactor())
    if status is None:
        log.close()
    else:
        log.end(status, "why", Totals(), "result")  # type: ignore[arg-type]
    return log.path


def test_the_newest_runs_sessions_that_did_not_pass_are_taken(tmp_path: Path) -> None:
    _session(tmp_path, "run1", "old", "failed")
    _session(tmp_path, "run2", "passed", "passed")
    failed = _session(tmp_path, "run2", "failed", "failed")
    cut = _session(tmp_path, "run2", "cut", None)
    _session(tmp_path, "run2", "child", "failed", parent_session_id="run2-failed")
    assert sorted(latest_run_logs(tmp_path)) == sorted([failed, cut])


def test_a_newest_run_that_passed_is_taken_whole_to_go_on_from(tmp_path: Path) -> None:
    _session(tmp_path, "run1", "old", "failed")
    passed = _session(tmp_path, "run2", "prompt", "passed")
    assert latest_run_logs(tmp_path) == [passed]


def test_an_out_folder_without_sessions_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no session logs under"):
        latest_run_logs(tmp_path)
