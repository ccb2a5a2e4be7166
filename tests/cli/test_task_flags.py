"""DESIGN 20's task flags on `run`, each through the CLI against the fake model server: the task
file says one thing, the flag another, and the flag wins (`--allow-tool` adds a rule)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import (
    MODEL,
    Done,
    Scenario,
    call,
    complete,
    default_args,
    run_all,
    tool_reply,
)
from tests.fakes.model_server import fault, reply

NOTES = {"notes.txt": "the notes say hi\n"}
ROOMY = {"prompt": "Read notes.txt.", "limits": {"max_turns": 20, "max_tokens": 10_000_000}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Done]:
    base = tmp_path_factory.mktemp("task-flags")
    read = tool_reply("read_file", path="notes.txt")
    return run_all(
        {
            "max_tokens": Scenario(
                task=ROOMY,
                files=NOTES,
                steps=[reply(read.text, input_tokens=5000), complete()],
                args=default_args("--max-tokens", "1000"),
            ),
            "cost": Scenario(
                task={**ROOMY, "limits": {**ROOMY["limits"], "max_cost_usd": 100}},
                files=NOTES,
                # gpt-4.1 at $2 per million input tokens: $0.20 for the first call.
                steps=[reply(read.text, input_tokens=100_000), complete()],
                args=default_args("--task-max-cost-usd", "0.05"),
            ),
            "timeout": Scenario(
                task={**ROOMY, "limits": {**ROOMY["limits"], "timeout": "10m"}},
                files=NOTES,
                steps=[fault("stall", text=call("attempt_completion", result="late"))],
                args=default_args("--timeout", "1s"),
            ),
            "allow": Scenario(
                task=ROOMY,
                files=NOTES,
                steps=[read, complete("refused as it should be")],
                args=default_args("--allow-tool", "read_file(other*)"),
            ),
        },
        base,
    )


def test_max_tokens_on_the_command_line_overrides_the_tasks_limit(
    runs: dict[str, Done],
) -> None:
    done = runs["max_tokens"]
    assert done.code == 5, done.explain()
    assert done.task()["status"] == "budget_exceeded"
    assert "token" in done.task()["reason"]


def test_task_max_cost_usd_overrides_the_tasks_cost_limit(runs: dict[str, Done]) -> None:
    done = runs["cost"]
    assert done.code == 5, done.explain()
    assert "cost" in done.task()["reason"]


def test_timeout_overrides_the_tasks_time_limit(runs: dict[str, Done]) -> None:
    done = runs["timeout"]
    assert done.code == 5, done.explain()
    assert "time limit" in done.task()["reason"]


def test_allow_tool_adds_a_rule_that_limits_the_tool_to_what_it_matches(
    runs: dict[str, Done],
) -> None:
    done = runs["allow"]
    assert done.code == 0, done.explain()
    [refused] = done.events("tool_call")
    assert refused["is_error"] and "read_file(other*)" in refused["result"]
    assert MODEL.startswith("openai:")  # the price the cost test counts on
