"""`--events` (runner.sessionlog.events): each log line streamed as written, with its task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.outcome import Totals
from runner.redact import Redactor
from runner.sessionlog import EventStream, SessionLogWriter

SECRET = "hunter2-is-a-long-secret"


def _header(name: str) -> dict[str, object]:
    return {
        "run_id": "r",
        "runner_version": "0",
        "task": {"name": name},
        "model": "replay:none",
        "system_prompt": f"# ROLE\nYou know {SECRET}.\n",
        "tools": [],
    }


def test_every_line_of_every_log_is_streamed_as_written_with_its_task(tmp_path: Path) -> None:
    stream = EventStream.open(str(tmp_path / "events.jsonl"))
    redactor = Redactor([SECRET])
    first = SessionLogWriter.create(tmp_path, _header("one"), redactor, events=stream)
    second = SessionLogWriter.create(tmp_path, _header(f"two {SECRET}"), redactor, events=stream)
    first.message("user", f"use {SECRET}", 0)
    second.message("user", "hi", 0)
    first.end("passed", "completed", Totals(), SECRET)
    second.close()
    # A record streamed after the first line is readable before the stream closes.
    text = (tmp_path / "events.jsonl").read_text(encoding="utf-8")
    stream.close()
    assert SECRET not in text
    events = [json.loads(line) for line in text.splitlines()]
    for writer in (first, second):
        mine = [e for e in events if e["session_id"] == writer.session_id]
        logged = [json.loads(line) for line in writer.path.read_text("utf-8").splitlines()]
        assert [e["record"] for e in mine] == logged
        assert {e["task"] for e in mine} == {logged[0]["task"]["name"]}
    assert {e["task"] for e in events} == {"one", "two ***"}


def test_an_events_file_that_cannot_be_written_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--events"):
        EventStream.open(str(tmp_path / "no" / "such" / "folder" / "e.jsonl"))
