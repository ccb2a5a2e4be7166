"""Process faults: signals as GitHub sends them, SIGKILL mid tool call, artifacts that cannot be
written. Each run checks its exit code, the task status everywhere it is reported, the events
before the fault, the processes left, and the seeded secrets.

GitHub cancels a job with SIGINT, then SIGTERM 7.5 s later; the gap is shortened to SIGNAL_GAP_S
here, both signals are still sent. The first signal decides the exit code (130).
"""

from __future__ import annotations

import resource
import signal
import time
from pathlib import Path

import pytest

from runner.sessionlog import find_sessions, read_session
from tests.e2e.conftest import (
    NO_WORKSPACE,
    REACH_S,
    Done,
    Scenario,
    Started,
    assert_no_process_left,
    complete,
    junit_schema_problems,
    kill,
    needs_shared_junit,
    processes_mentioning,
    tool_reply,
    wait_until,
)
from tests.fakes.model_server import fault, reply
from tests.hardening.conftest import (
    WIRE_MODELS,
    assert_reported,
    event_kinds,
    secret_leaks,
    start_on,
    wire_args,
)

pytestmark = pytest.mark.slow

SIGNAL_GAP_S = 0.5
"""Stands in for GitHub's 7.5 s between SIGINT and SIGTERM."""
# Unique durations: the commands are found by their command lines, and must not survive.
SLEEP_SIGNALLED = "sleep 37.25"
SLEEP_KILLED = "sleep 38.75"
SLEEP_IN_HOOK = "sleep 39.25"
BIG_REPLY = "A reply too long for the log file's size limit. " * 100


def github_cancel(run: Started) -> None:
    """SIGINT, then SIGTERM SIGNAL_GAP_S later (the deliberate gap of the test)."""
    run.process.send_signal(signal.SIGINT)
    time.sleep(SIGNAL_GAP_S)
    if run.process.poll() is None:
        run.process.send_signal(signal.SIGTERM)


def log_size(root: Path) -> int:
    sessions = find_sessions(root / "OUT")
    return sessions[0].stat().st_size if sessions else 0


SCENARIOS = {
    "signals_model": Scenario(
        task=NO_WORKSPACE, steps=[reply("Let me think."), fault("stall", text="never")]
    ),
    "signals_tool": Scenario(
        task={"prompt": "Wait."}, steps=[tool_reply("execute_command", command=SLEEP_SIGNALLED)]
    ),
    "killed_tool": Scenario(
        task={"prompt": "Wait."}, steps=[tool_reply("execute_command", command=SLEEP_KILLED)]
    ),
    # Unconfined, so that only the reaper can end the hook once the runner is gone (a sandbox's
    # bwrap dies with its parent, and takes the hook with it).
    "killed_hook": Scenario(
        task={"prompt": "Wait.", "hooks": {"session_start": [{"run": SLEEP_IN_HOOK}]}},
        steps=[complete()],
        args=wire_args("openai", "--sandbox-backend", "none"),
    ),
    "log_unwritable": Scenario(
        task=NO_WORKSPACE,
        steps=[reply("Let me think."), fault("stall", text=BIG_REPLY + "and no tool call")],
    ),
    "out_under_file": Scenario(
        task=NO_WORKSPACE,
        steps=[complete()],
        extra_files={"blocker": "a regular file, not a folder\n"},
        args=[
            *("run", "t.yaml", "--model", WIRE_MODELS["openai"]),
            *("--out", "blocker/OUT", "--junit", "junit.xml"),
        ],
    ),
    "out_and_junit_under_file": Scenario(
        task=NO_WORKSPACE,
        steps=[complete()],
        extra_files={"blocker": "a regular file, not a folder\n"},
        args=["run", "t.yaml", "--model", WIRE_MODELS["openai"], "--out", "blocker/OUT"],
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    """Every run at once; each fault is injected when its run reaches the right point."""
    started: dict[str, Started] = {}
    try:
        for name, scenario in SCENARIOS.items():
            started[name] = start_on(scenario, module_dir / name)

        assert started["signals_model"].server.wait_for_stall(timeout=REACH_S)
        github_cancel(started["signals_model"])

        wait_until(lambda: bool(processes_mentioning(SLEEP_SIGNALLED)), REACH_S, SLEEP_SIGNALLED)
        github_cancel(started["signals_tool"])

        wait_until(lambda: bool(processes_mentioning(SLEEP_KILLED)), REACH_S, SLEEP_KILLED)
        started["killed_tool"].process.send_signal(signal.SIGKILL)

        wait_until(lambda: bool(processes_mentioning(SLEEP_IN_HOOK)), REACH_S, SLEEP_IN_HOOK)
        started["killed_hook"].process.send_signal(signal.SIGKILL)

        # The log stops growing where it is: the next event cannot be written.
        unwritable = started["log_unwritable"]
        assert unwritable.server.wait_for_stall(timeout=REACH_S)
        limit = log_size(module_dir / "log_unwritable") + 64
        resource.prlimit(unwritable.pid, resource.RLIMIT_FSIZE, (limit, limit))
        unwritable.server.release()

        return {name: run.wait() for name, run in started.items()}
    finally:
        for run in started.values():
            kill(run.process)
            run.server.stop()


@pytest.fixture(scope="module")
def resumed(module_dir: Path, runs: dict[str, Done]) -> Done:
    """`resume OUT` of the run killed during its tool call."""
    root = module_dir / "killed_tool"
    scenario = Scenario(args=["resume", "OUT", "--out", "OUT"], steps=[complete("resumed")])
    run = start_on(scenario, root)
    try:
        return run.wait()
    finally:
        run.server.stop()


@pytest.mark.parametrize("case", ["signals_model", "signals_tool"])
def test_sigint_then_sigterm_mid_turn_exits_130_with_every_report_written(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert_reported(done, 130, "interrupted")
    assert done.task()["kind"] == "signal"
    assert "INTERRUPTED" in done.stdout.upper()


def test_signals_during_a_model_call_keep_every_earlier_event(runs: dict[str, Done]) -> None:
    kinds = event_kinds(runs["signals_model"])
    assert kinds == ["message", "message", "model_call", "message", "end"]


def test_signals_during_a_tool_call_keep_every_earlier_event(runs: dict[str, Done]) -> None:
    kinds = event_kinds(runs["signals_tool"])
    assert kinds[:3] == ["message", "message", "model_call"]
    assert kinds[-1] == "end"


def test_signals_during_a_tool_call_stop_the_command_it_ran(runs: dict[str, Done]) -> None:
    assert_no_process_left(runs["signals_tool"].root)
    wait_until(lambda: not processes_mentioning(SLEEP_SIGNALLED), 10, f"{SLEEP_SIGNALLED} to end")


def test_sigkill_during_a_tool_call_leaves_every_earlier_event_and_no_command(
    runs: dict[str, Done],
) -> None:
    done = runs["killed_tool"]
    assert done.code == -signal.SIGKILL
    (path,) = find_sessions(done.out)
    record = read_session(path)
    assert record.end is None and not record.torn
    assert [e["type"] for e in record.events] == ["message", "message", "model_call"]
    # The runner dies without cleaning up: its reaper sees the pipe close and kills the command.
    wait_until(lambda: not processes_mentioning(SLEEP_KILLED), 10, f"{SLEEP_KILLED} to end")


def test_sigkill_while_a_hook_runs_leaves_no_hook_behind(runs: dict[str, Done]) -> None:
    assert runs["killed_hook"].code == -signal.SIGKILL
    # Nobody cleans up after a SIGKILL: the reaper kills the hook's group as it does a command's.
    wait_until(lambda: not processes_mentioning(SLEEP_IN_HOOK), 10, f"{SLEEP_IN_HOOK} to end")


def test_resume_after_a_sigkill_mid_tool_call_finishes_the_task(resumed: Done) -> None:
    assert resumed.code == 0, resumed.explain()
    assert resumed.task()["status"] == "passed" and resumed.task()["result"] == "resumed"
    records = resumed.logs()
    assert len(records) == 2
    (child,) = [r for r in records if r.parent_id is not None]
    assert child.end is not None and child.end["status"] == "passed"
    # The interrupted call is in the resumed context; it was not run again.
    sent = resumed.requests[0].body["messages"]
    assert any(SLEEP_KILLED in str(m["content"]) for m in sent)
    assert [e for e in child.events if e["type"] == "tool_call"] == []
    assert_no_process_left(resumed.root)


def test_a_log_that_becomes_unwritable_mid_session_ends_the_run_with_exit_4(
    runs: dict[str, Done],
) -> None:
    done = runs["log_unwritable"]
    assert done.code == 4, done.explain()
    assert done.task()["status"] == "error" and done.task()["kind"] == "artifacts"
    assert done.testcase().find("error") is not None
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    # Every event written before the disk filled is still there and readable.
    (path,) = find_sessions(done.out)
    record = read_session(path)
    assert [e["type"] for e in record.events] == ["message", "message", "model_call", "message"]


def test_an_out_folder_under_a_regular_file_exits_2_before_any_task_naming_the_path(
    runs: dict[str, Done],
) -> None:
    # Checked before any task starts (issue 28): nothing ran, so no JUnit either.
    done = runs["out_under_file"]
    assert done.code == 2, done.explain()
    assert "--out blocker/OUT: cannot create or write this folder" in done.stderr
    assert "START" not in done.stdout and not done.requests
    assert "Traceback" not in done.stderr
    assert not (done.root / "junit.xml").exists()


def test_unwritable_out_and_junit_exit_2_with_one_clear_error(runs: dict[str, Done]) -> None:
    done = runs["out_and_junit_under_file"]
    assert done.code == 2, done.explain()
    assert done.stderr.count("blocker") == 1
    assert "Traceback" not in done.stderr


@needs_shared_junit
@pytest.mark.parametrize("case", ["signals_model", "signals_tool", "log_unwritable"])
def test_junit_of_a_faulted_run_validates_against_the_jenkins_xsd(
    runs: dict[str, Done], case: str
) -> None:
    assert junit_schema_problems(runs[case].out / "junit.xml") is None


@pytest.mark.parametrize("case", sorted(SCENARIOS))
def test_no_artifact_or_console_line_holds_a_seeded_secret(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert secret_leaks(done.root, done.stdout, done.stderr) == {}


@pytest.mark.parametrize("case", sorted(SCENARIOS))
def test_no_process_outlives_its_run(runs: dict[str, Done], case: str) -> None:
    assert_no_process_left(runs[case].root)
