"""How a task ends, end to end: passed, failed checks, expectations, silence, provider errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.toolcall.reply import REMINDER
from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    complete,
    junit_schema_problems,
    log_schema_errors,
    needs_shared_junit,
    run_all,
    tool_reply,
)
from tests.fakes.model_server import fault, reply

MISSING = "fixed.txt is missing"
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "integer"}},
}

SCENARIOS = {
    "passing": Scenario(
        task={"prompt": "Read notes.txt and report."},
        files={"notes.txt": "hello from the notes\n"},
        steps=[tool_reply("read_file", path="notes.txt"), complete("the notes say hello")],
    ),
    "check_repaired": Scenario(
        task={
            "success": {
                "check": f"test -f fixed.txt || {{ echo '{MISSING}'; exit 3; }}",
                "retries": 1,
            }
        },
        steps=[
            complete("first try"),
            tool_reply("write_to_file", path="fixed.txt", content="fixed"),
            complete("second try"),
        ],
    ),
    "check_failed": Scenario(
        task={**NO_WORKSPACE, "success": {"check": "echo still broken; exit 3", "retries": 1}},
        steps=[complete("first try"), complete("second try")],
    ),
    "regex_failed": Scenario(
        task={**NO_WORKSPACE, **{"success": {"expect": {"regex": "^42$"}}}}, steps=[complete("41")]
    ),
    "regex_passed": Scenario(
        task={**NO_WORKSPACE, **{"success": {"expect": {"regex": "^42$"}}}}, steps=[complete("42")]
    ),
    "schema_failed": Scenario(
        task={**NO_WORKSPACE, **{"success": {"expect": {"json_schema": ANSWER_SCHEMA}}}},
        steps=[complete('{"answer": "many"}')],
    ),
    "schema_passed": Scenario(
        task={**NO_WORKSPACE, **{"success": {"expect": {"json_schema": ANSWER_SCHEMA}}}},
        steps=[complete('{"answer": 42}')],
    ),
    "silent": Scenario(task=NO_WORKSPACE, default=reply("I think everything is fine already.")),
    "unauthorized": Scenario(task=NO_WORKSPACE, default=fault("unauthorized")),
    "rate_limited": Scenario(
        task=NO_WORKSPACE, steps=[fault("rate_limit", retry_after="30"), complete("after the wait")]
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def test_a_passing_task_exits_0_and_writes_junit_summary_and_log(runs: dict[str, Done]) -> None:
    done = runs["passing"]
    assert done.code == 0, done.explain()
    assert done.task()["status"] == "passed"
    assert done.task()["result"] == "the notes say hello"
    assert done.testcase().find("failure") is None and done.testcase().find("error") is None
    record = done.log()
    assert record.end is not None and record.end["status"] == "passed"
    (read,) = done.events("tool_call")
    assert read["tool"] == "read_file" and "hello from the notes" in read["result"]


@needs_shared_junit
def test_junit_of_passed_and_failed_runs_validates_against_the_jenkins_xsd(
    runs: dict[str, Done],
) -> None:
    for name in ("passing", "check_failed", "unauthorized", "rate_limited"):
        problems = junit_schema_problems(runs[name].out / "junit.xml")
        assert problems is None, f"{name}: {problems}"


def test_every_session_log_line_matches_the_json_schema(runs: dict[str, Done]) -> None:
    for name, done in runs.items():
        for record in done.logs():
            assert log_schema_errors(record.path) == [], name


def test_a_failed_check_goes_back_to_the_agent_and_the_repaired_task_passes(
    runs: dict[str, Done],
) -> None:
    done = runs["check_repaired"]
    assert done.code == 0, done.explain()
    assert (done.root / "w" / "fixed.txt").read_text(encoding="utf-8") == "fixed"
    # The second model call sees the check's output as the last user message.
    feedback = done.requests[1].body["messages"][-1]
    assert feedback["role"] == "user" and MISSING in feedback["content"]
    assert [c["exit_code"] for c in done.events("check")] == [3, 0]
    assert done.task()["result"] == "second try"


def test_a_check_that_stays_failed_after_its_retries_exits_1_with_a_check_failure(
    runs: dict[str, Done],
) -> None:
    done = runs["check_failed"]
    assert done.code == 1, done.explain()
    assert len(done.events("check")) == 2
    failure = done.testcase().find("failure")
    assert failure is not None and failure.get("type") == "check"
    assert done.task()["status"] == "failed"


def test_a_result_that_misses_expect_regex_fails_the_task(runs: dict[str, Done]) -> None:
    done = runs["regex_failed"]
    assert done.code == 1, done.explain()
    failure = done.testcase().find("failure")
    assert failure is not None and failure.get("type") == "expect"
    assert "^42$" in done.task()["reason"]


def test_a_result_that_matches_expect_regex_passes(runs: dict[str, Done]) -> None:
    assert runs["regex_passed"].code == 0, runs["regex_passed"].explain()


def test_a_result_that_breaks_expect_json_schema_fails_the_task(runs: dict[str, Done]) -> None:
    done = runs["schema_failed"]
    assert done.code == 1, done.explain()
    assert done.task()["kind"] == "expect"
    assert "answer" in done.task()["reason"]


def test_a_result_that_fits_expect_json_schema_passes(runs: dict[str, Done]) -> None:
    done = runs["schema_passed"]
    assert done.code == 0, done.explain()
    assert json.loads(done.task()["result"]) == {"answer": 42}


def test_three_replies_without_a_tool_call_fail_the_task_after_two_reminders(
    runs: dict[str, Done],
) -> None:
    done = runs["silent"]
    assert done.code == 1, done.explain()
    assert len(done.requests) == 3
    reminders = [m for m in done.events("message") if m["content"] == REMINDER]
    assert len(reminders) == 2 and all(m["role"] == "user" for m in reminders)
    assert done.task()["kind"] == "no_tool_call"


def test_a_provider_401_exits_4_at_once_with_a_junit_error(runs: dict[str, Done]) -> None:
    done = runs["unauthorized"]
    assert done.code == 4, done.explain()
    assert len(done.requests) == 1  # not retried
    error = done.testcase().find("error")
    assert error is not None
    assert done.task()["status"] == "error"
    assert done.log().end is not None


def test_a_429_is_retried_after_its_retry_after_and_the_retry_is_logged(
    runs: dict[str, Done],
) -> None:
    done = runs["rate_limited"]
    assert done.code == 0, done.explain()
    assert len(done.requests) == 2
    (retry,) = done.events("retry")
    assert retry["status"] == 429
    # retry-after: 30 is honoured up to the configured cap (0.2 s in these tests).
    assert 0 < retry["wait_s"] <= 0.2
