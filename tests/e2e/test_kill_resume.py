"""A run killed with SIGKILL mid-task leaves a readable log, and `resume` finishes the task."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from runner.sessionlog import SessionRecord, find_sessions, read_session
from tests.e2e.conftest import (
    REACH_S,
    Done,
    Scenario,
    assert_no_process_left,
    complete,
    kill,
    log_schema_errors,
    start,
    tool_reply,
)
from tests.fakes.model_server import FakeModelServer, fault

COUNT_RUN = "echo ran >> ran.txt"


def sessions(out: Path) -> list[SessionRecord]:
    return [read_session(path) for path in find_sessions(out)]


@pytest.fixture(scope="module")
def killed(module_dir: Path) -> SessionRecord:
    """The log of a run SIGKILLed while its second model call hung."""
    steps = [tool_reply("execute_command", command=COUNT_RUN), fault("stall")]
    with FakeModelServer(steps) as server:
        run = start(Scenario(task={"prompt": "Count one run."}), module_dir, server)
        try:
            assert server.wait_for_stall(timeout=REACH_S), "the second model call never came"
            run.process.send_signal(signal.SIGKILL)
            assert run.process.wait(timeout=30) == -signal.SIGKILL
        finally:
            kill(run.process)
    # Nothing the run started outlives it (its reaper, if any, exits when its pipe closes).
    assert_no_process_left(module_dir)
    (record,) = sessions(module_dir / "OUT")
    return record


@pytest.fixture(scope="module")
def resumed(module_dir: Path, killed: SessionRecord) -> Done:
    with FakeModelServer([complete("counted once")]) as server:
        run = start(Scenario(args=["resume", "OUT", "--out", "OUT"]), module_dir, server)
        done = run.wait()
    assert_no_process_left(module_dir)
    return done


def test_the_killed_log_reads_back_with_every_event_and_no_end(killed: SessionRecord) -> None:
    assert killed.end is None and not killed.torn
    kinds = [event["type"] for event in killed.events]
    assert kinds == ["message", "message", "model_call", "tool_call", "message"]
    (call,) = [e for e in killed.events if e["type"] == "tool_call"]
    assert call["tool"] == "execute_command" and not call["is_error"]


def test_resume_of_the_directory_finishes_the_task(resumed: Done) -> None:
    assert resumed.code == 0, resumed.explain()
    assert resumed.task()["status"] == "passed"
    assert resumed.task()["result"] == "counted once"


def test_the_resumed_log_links_to_the_killed_session(resumed: Done, killed: SessionRecord) -> None:
    (child,) = [r for r in sessions(resumed.out) if r.session_id != killed.session_id]
    assert child.parent_id == killed.session_id
    assert child.end is not None and child.end["status"] == "passed"


def test_resume_does_not_run_the_logged_tool_calls_again(
    resumed: Done, killed: SessionRecord
) -> None:
    assert (resumed.root / "w" / "ran.txt").read_text(encoding="utf-8") == "ran\n"
    (child,) = [r for r in sessions(resumed.out) if r.session_id != killed.session_id]
    assert [e for e in child.events if e["type"] == "tool_call"] == []
    # The model sees the earlier tool call and its result in the resumed context.
    messages = resumed.requests[0].body["messages"]
    assert any(COUNT_RUN in str(m["content"]) for m in messages)


def test_the_killed_and_the_resumed_logs_match_the_json_schema(resumed: Done) -> None:
    for record in sessions(resumed.out):
        assert log_schema_errors(record.path) == []
