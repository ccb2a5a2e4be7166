"""Winding down at a limit: a notice near it, one last tools-off request at it, and a resumable
budget_exceeded task whose result is the agent's final report (DESIGN 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    call,
    complete,
    default_args,
    run_all,
    start,
    tool_reply,
)
from tests.fakes.model_server import FakeModelServer, reply

NOTICE = "Budget notice"
TOOLS_OFF = "Tools are off"
REPORT = "REPORT: listed the files twice; still to do: write the summary."

SCENARIOS = {
    "turns": Scenario(
        task={"limits": {"max_turns": 3}},
        steps=[
            tool_reply("list_files", path="."),
            tool_reply("list_files", path="."),
            tool_reply("list_files", path="."),
            reply(REPORT),
        ],
    ),
    "report_by_completion": Scenario(
        # The model calls attempt_completion anyway: its result is the report.
        # gpt-4.1 input is $2 per million tokens: one call of 1000 tokens costs $0.002.
        task={**NO_WORKSPACE, "limits": {"max_cost_usd": 0.001}},
        steps=[reply("Thinking.", input_tokens=1000), complete(REPORT)],
    ),
    "tokens": Scenario(
        # A token limit is hard, as the run's cost cap: the report's prompt would pass it again.
        task={**NO_WORKSPACE, "limits": {"max_tokens": 100}},
        steps=[reply("Thinking.", input_tokens=500), reply(REPORT)],
    ),
    "time": Scenario(
        # Every reply is the report plus a long command, so the test holds wherever the limit
        # strikes on a loaded machine: in the first model call or in the command.
        task={"limits": {"timeout": "3s"}},
        default=reply(f"{REPORT}\n{call('execute_command', command='sleep 30; echo SLEPT')}"),
    ),
    "run_cost": Scenario(
        # The run's own cap is a hard ceiling: no last request past it.
        task={**NO_WORKSPACE},
        steps=[reply("Thinking.", input_tokens=1000), reply(REPORT)],
        args=default_args("--max-cost-usd", "0.001"),
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def last_user_text(request: Any) -> str:
    messages = request.body["messages"]
    assert messages[-1]["role"] == "user"
    return str(messages[-1]["content"])


def test_near_the_turn_limit_the_agent_is_told_once_to_finish(runs: dict[str, Done]) -> None:
    done = runs["turns"]
    assert len(done.requests) == 4, done.explain()
    # 90 % of 3 turns rounds to the limit: the notice comes before the last turn, not earlier.
    assert NOTICE not in last_user_text(done.requests[1])
    assert NOTICE in last_user_text(done.requests[2])
    assert "1 of your 3 turns left" in last_user_text(done.requests[2])
    told = [m for m in done.requests[3].body["messages"] if NOTICE in str(m["content"])]
    assert len(told) == 1


def test_at_the_limit_one_tools_off_request_asks_for_the_report_that_becomes_the_result(
    runs: dict[str, Done],
) -> None:
    done = runs["turns"]
    assert done.code == 5, done.explain()
    entry = done.task()
    assert (entry["status"], entry["kind"]) == ("budget_exceeded", "turns")
    assert TOOLS_OFF in last_user_text(done.requests[3])
    assert entry["result"] == REPORT
    assert REPORT in (done.testcase().findtext("system-out") or "")
    record = done.log()
    assert record.end is not None and record.end["result"] == REPORT
    # The last reply is logged like any other turn, and its tokens are counted.
    assert len(done.events("model_call")) == 4 and entry["turns"] == 4


def test_a_completion_call_in_the_last_reply_gives_its_result_as_the_report(
    runs: dict[str, Done],
) -> None:
    done = runs["report_by_completion"]
    assert done.code == 5, done.explain()
    assert done.task()["kind"] == "cost"
    assert done.task()["result"] == REPORT


def test_no_last_request_passes_the_tasks_token_limit(runs: dict[str, Done]) -> None:
    done = runs["tokens"]
    assert done.code == 5, done.explain()
    assert done.task()["kind"] == "tokens"
    assert len(done.requests) == 1
    assert done.task()["result"] == ""


def test_the_time_limit_also_ends_with_a_final_report(runs: dict[str, Done]) -> None:
    done = runs["time"]
    assert done.code == 5, done.explain()
    assert done.task()["kind"] == "time"
    assert done.task()["result"].startswith(REPORT)
    assert TOOLS_OFF in last_user_text(done.requests[-1])
    # The limit cut the long command short (no wall-clock bound: a loaded machine may be slow
    # everywhere else): no command ran to its end.
    assert not any("SLEPT" in str(e["result"]) for e in done.events("tool_call"))


def test_no_last_request_passes_the_runs_own_cost_cap(runs: dict[str, Done]) -> None:
    done = runs["run_cost"]
    assert done.code == 5, done.explain()
    assert done.task()["kind"] == "run_cost"
    assert len(done.requests) == 1
    assert done.task()["result"] == ""


def test_a_budget_stopped_task_resumes_with_a_bigger_budget_and_passes(
    runs: dict[str, Done],
) -> None:
    root = runs["turns"].root
    with FakeModelServer([complete("finished after resume")]) as server:
        resumed = start(
            Scenario(args=["resume", "OUT", "--out", "OUT", "--max-turns", "10"]), root, server
        ).wait()
    assert resumed.code == 0, resumed.explain()
    child = resumed.task()
    assert (child["status"], child["result"]) == ("passed", "finished after resume")
    # The resumed context holds the final request and the report.
    contents = [str(m["content"]) for m in resumed.requests[0].body["messages"]]
    assert any(TOOLS_OFF in text for text in contents)
    assert REPORT in contents
