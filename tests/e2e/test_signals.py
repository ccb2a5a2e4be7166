"""SIGINT and SIGTERM mid-turn: the task ends interrupted and every report is still written."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    REACH_S,
    Done,
    Scenario,
    Started,
    assert_no_process_left,
    junit_schema_problems,
    kill,
    log_schema_errors,
    needs_shared_junit,
    start,
    tool_reply,
)
from tests.fakes.model_server import FakeModelServer, fault

SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143)}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    """Both runs at once: each stalls in its second model call and gets its signal there."""
    servers: dict[str, FakeModelServer] = {}
    started: dict[str, Started] = {}
    try:
        for name in SIGNALS:
            servers[name] = FakeModelServer(
                [tool_reply("list_files", path="."), fault("stall")]
            ).start()
            started[name] = start(Scenario(task={}), module_dir / name, servers[name])
        for name, (sig, _) in SIGNALS.items():
            assert servers[name].wait_for_stall(timeout=REACH_S), f"{name}: no stalled model call"
            started[name].process.send_signal(sig)
        return {name: run.wait() for name, run in started.items()}
    finally:
        for run in started.values():
            kill(run.process)
        for server in servers.values():
            server.stop()


@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_mid_turn_exits_with_its_code_and_an_interrupted_end_line(
    runs: dict[str, Done], name: str
) -> None:
    done = runs[name]
    assert done.code == SIGNALS[name][1], done.explain()
    record = done.log()
    assert record.end is not None
    assert record.end["status"] == "interrupted"
    assert [e["type"] for e in record.events].count("tool_call") == 1


@pytest.mark.parametrize("name", list(SIGNALS))
def test_an_interrupted_run_still_writes_junit_and_the_summary(
    runs: dict[str, Done], name: str
) -> None:
    done = runs[name]
    assert done.task()["status"] == "interrupted"
    assert done.summary()["exit_code"] == SIGNALS[name][1]
    assert done.testcase().find("error") is not None


@pytest.mark.parametrize("name", list(SIGNALS))
def test_an_interrupted_run_leaves_no_process_behind(runs: dict[str, Done], name: str) -> None:
    assert_no_process_left(runs[name].root)


@needs_shared_junit
@pytest.mark.parametrize("name", list(SIGNALS))
def test_junit_of_an_interrupted_run_validates_against_the_jenkins_xsd(
    runs: dict[str, Done], name: str
) -> None:
    assert junit_schema_problems(runs[name].out / "junit.xml") is None


@pytest.mark.parametrize("name", list(SIGNALS))
def test_an_interrupted_log_matches_the_json_schema(runs: dict[str, Done], name: str) -> None:
    assert log_schema_errors(runs[name].log().path) == []
