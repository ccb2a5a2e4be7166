"""Every limit stops its task cleanly: budget_exceeded, exit code 5, a budget_exceeded failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    assert_no_process_left,
    complete,
    default_args,
    junit_schema_problems,
    needs_shared_junit,
    run_all,
    tool_reply,
)
from tests.fakes.model_server import reply

# A reply with no tool call: it costs a turn and earns a reminder, so the task goes on.
THINKING = "Let me think about this a little longer."
# The command the time limit must cut short: so long that only a command that ran to its end
# makes the task last this long, however loaded the machine is (the runner waits 60 s at most).
LONG_COMMAND_S = 50

SCENARIOS = {
    "turns": Scenario(
        task={"limits": {"max_turns": 2}}, default=tool_reply("list_files", path=".")
    ),
    "tokens": Scenario(
        task={**NO_WORKSPACE, "limits": {"max_tokens": 100}},
        default=reply(THINKING, input_tokens=500),
    ),
    "cost": Scenario(
        # gpt-4.1 input is $2 per million tokens: one call of 1000 tokens costs $0.002.
        task={**NO_WORKSPACE, "limits": {"max_cost_usd": 0.001}},
        default=reply(THINKING, input_tokens=1000),
    ),
    "time": Scenario(
        task={"limits": {"timeout": "2s"}},
        steps=[tool_reply("execute_command", command=f"sleep {LONG_COMMAND_S}")],
        default=complete("too late"),
    ),
    "run_cost": Scenario(
        # Each task alone stays under the cap; together they pass it, so `second` is stopped.
        task={
            "defaults": {**NO_WORKSPACE, "workdir": "w"},
            "tasks": [
                {"name": "first", "prompt": "One turn."},
                {"name": "second", "prompt": "Two turns."},
            ],
        },
        steps=[
            complete("first done", input_tokens=300),
            reply(THINKING, input_tokens=300),
            complete("second done", input_tokens=300),
        ],
        args=default_args("--max-cost-usd", "0.001"),
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def assert_stopped_by(done: Done, kind: str, task: str | None = None) -> None:
    assert done.code == 5, done.explain()
    entry = done.task(task)
    assert (entry["status"], entry["kind"]) == ("budget_exceeded", kind), entry
    failure = done.testcase(task).find("failure")
    assert failure is not None and failure.get("type") == "budget_exceeded"
    [record] = [r for r in done.logs() if r.header["task"]["name"] == entry["name"]]
    assert record.end is not None and record.end["status"] == "budget_exceeded"


def test_max_turns_stops_the_task_with_exit_code_5(runs: dict[str, Done]) -> None:
    assert_stopped_by(runs["turns"], "turns")
    # Two turns, then the one tools-off request for a final report (tests/e2e/test_winddown.py).
    assert len(runs["turns"].requests) == 3


def test_max_tokens_stops_the_task_with_exit_code_5(runs: dict[str, Done]) -> None:
    assert_stopped_by(runs["tokens"], "tokens")
    # A token limit is hard: no tools-off request for a final report past it (its prompt alone
    # would pass the limit again).
    assert len(runs["tokens"].requests) == 1


def test_max_cost_usd_stops_the_task_with_exit_code_5(runs: dict[str, Done]) -> None:
    assert_stopped_by(runs["cost"], "cost")
    assert len(runs["cost"].requests) == 2


def test_the_wall_time_limit_stops_a_long_tool_call_with_exit_code_5(
    runs: dict[str, Done],
) -> None:
    done = runs["time"]
    assert_stopped_by(done, "time")
    assert done.task()["duration_s"] < LONG_COMMAND_S - 5, "the command was not cut short"
    assert_no_process_left(done.root)


def test_the_run_cost_cap_is_shared_by_the_tasks_of_a_run(runs: dict[str, Done]) -> None:
    done = runs["run_cost"]
    assert done.task("first")["status"] == "passed"
    assert_stopped_by(done, "run_cost", "second")
    assert done.task("second")["cost_usd"] < 0.001


@needs_shared_junit
def test_junit_of_budget_stopped_runs_validates_against_the_jenkins_xsd(
    runs: dict[str, Done],
) -> None:
    for name, done in runs.items():
        assert junit_schema_problems(done.out / "junit.xml") is None, name
