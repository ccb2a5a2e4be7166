"""MCP faults through the CLI: servers that fail, hang, die, answer 50 MB or flood stderr.

Every case checks the exit code, the task's status in JUnit and in the log, that the log holds
every event before the fault (and matches its schema), and that no process is left behind. The
test servers get the scenario folder as `--name`, so `assert_no_process_left` finds them too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.mcp.render import MAX_RESULT_CHARS
from tests.e2e.conftest import (
    Done,
    Scenario,
    assert_no_process_left,
    complete,
    log_schema_errors,
    run_all,
    tool_reply,
)
from tests.hardening.conftest import fault_server, sdk_server_yaml

MB = 1024 * 1024


def servers(**extensions: dict[str, Any]) -> dict[str, Any]:
    """A task's `extensions:` with the workspace off and the given servers on."""
    return {"extensions": {"workspace": {"enabled": False}, **extensions}}


def scenarios(base: Path) -> dict[str, Scenario]:
    def name(case: str) -> tuple[str, str]:
        return ("--name", str(base / case))

    return {
        "required_fails": Scenario(
            task=servers(bad=sdk_server_yaml("--fail-at-start", *name("required_fails"))),
            steps=[complete()],
        ),
        "optional_fails": Scenario(
            task=servers(
                bad=sdk_server_yaml("--fail-at-start", *name("optional_fails"), required=False)
            ),
            steps=[complete("ran without it")],
        ),
        "hangs_at_initialize": Scenario(
            task=servers(
                stuck=sdk_server_yaml("--hang-at-initialize", *name("hangs_at_initialize"))
            ),
            steps=[complete()],
            env={"AGENT_RUNNER_MCP_STARTUP_TIMEOUT_S": "1"},
        ),
        "tool_hangs": Scenario(
            task={
                **servers(test=sdk_server_yaml(*name("tool_hangs"))),
                "limits": {"tool_timeout": 1},
            },
            steps=[
                tool_reply("slow", seconds="60"),
                tool_reply("echo", text="still here"),
                complete("went on"),
            ],
        ),
        "dies_mid_call": Scenario(
            task=servers(test=sdk_server_yaml(*name("dies_mid_call"))),
            steps=[
                tool_reply("pid"),
                tool_reply("crash"),
                tool_reply("pid"),
                complete("restarted"),
            ],
        ),
        "big_result": Scenario(
            task=servers(test=fault_server("--tag", str(base / "big_result"))),
            steps=[tool_reply("big", megabytes="50"), complete("read it")],
        ),
        "floods_stderr": Scenario(
            task=servers(
                test=fault_server("--flood-at-start", "20", "--tag", str(base / "floods_stderr"))
            ),
            steps=[
                tool_reply("flood", megabytes="30"),
                tool_reply("echo", text="after the flood"),
                complete("survived"),
            ],
        ),
    }


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(scenarios(module_dir), module_dir)


def assert_outcome(done: Done, code: int, status: str, junit: str | None) -> None:
    """Exit code, the task's status in summary, JUnit and log; a schema-valid log; no leftovers."""
    assert done.code == code, done.explain()
    assert done.task()["status"] == status
    case = done.testcase()
    if junit is None:
        assert case.find("failure") is None and case.find("error") is None
    else:
        assert case.find(junit) is not None, json.dumps(done.task())
    record = done.log()
    assert record.end is not None and record.end["status"] == status
    for path in sorted((done.out / "sessions").glob("*.jsonl")):
        assert log_schema_errors(path) == []
    assert_no_process_left(done.root)


def tool_results(done: Done) -> list[tuple[str, str, bool]]:
    return [(e["tool"], e["result"], e["is_error"]) for e in done.events("tool_call")]


def test_a_required_server_that_fails_to_start_ends_the_run_with_exit_code_4(
    runs: dict[str, Done],
) -> None:
    done = runs["required_fails"]
    assert_outcome(done, 4, "error", "error")
    reason = done.log().end["reason"]  # type: ignore[index]
    assert "'bad' failed to start" in reason and "required: false" in reason
    assert "failing at start as asked" in reason, "the server's own last word is quoted"
    error = done.testcase().find("error")
    assert error is not None and error.get("message") == reason
    assert "'bad' failed to start" in done.stdout
    assert done.requests == []
    stderr_log = next(done.out.rglob("bad.stderr.log"))
    assert "failing at start as asked" in stderr_log.read_text(encoding="utf-8")


def test_an_optional_server_that_fails_to_start_is_skipped_with_a_warning_and_the_task_passes(
    runs: dict[str, Done],
) -> None:
    done = runs["optional_fails"]
    assert_outcome(done, 0, "passed", None)
    assert "'bad' failed to start" in done.stderr
    assert "skipped (optional server)" in done.stderr


def test_the_warning_about_a_skipped_optional_server_is_in_the_session_log(
    runs: dict[str, Done],
) -> None:
    warnings = [e["message"] for e in runs["optional_fails"].events("warning")]
    assert any("'bad' failed to start" in w for w in warnings), warnings


def test_a_server_that_hangs_at_initialize_fails_after_the_startup_timeout(
    runs: dict[str, Done],
) -> None:
    done = runs["hangs_at_initialize"]
    assert_outcome(done, 4, "error", "error")
    # The message names the 1 s startup timeout that ended the wait (not the 30 s default). No
    # wall-time assertion: on a loaded machine the duration is mostly the SDK's import.
    assert "within 1 s" in done.stderr + done.stdout


def test_a_tool_that_hangs_times_out_as_an_error_result_and_the_session_goes_on(
    runs: dict[str, Done],
) -> None:
    done = runs["tool_hangs"]
    assert_outcome(done, 0, "passed", None)
    (slow, slow_text, slow_error), (echo, echo_text, echo_error) = tool_results(done)
    assert (slow, slow_error) == ("slow", True) and "timed out after 1 s" in slow_text
    assert (echo, echo_text, echo_error) == ("echo", "still here", False)


def test_a_server_that_dies_mid_call_is_restarted_and_the_next_call_works(
    runs: dict[str, Done],
) -> None:
    done = runs["dies_mid_call"]
    assert_outcome(done, 0, "passed", None)
    (_, first_pid, ok1), (_, crashed, crash_error), (_, second_pid, ok2) = tool_results(done)
    assert not ok1 and not ok2 and crash_error
    assert "closed the connection" in crashed
    assert first_pid != second_pid
    warnings = [e["message"] for e in done.events("warning")]
    assert any("was restarted (1 of 3)" in w for w in warnings), warnings


def test_a_50_mb_tool_result_is_cut_for_the_model_and_spilled_beside_the_log(
    runs: dict[str, Done],
) -> None:
    done = runs["big_result"]
    assert_outcome(done, 0, "passed", None)
    [event] = done.events("tool_call")
    assert not event["is_error"]
    assert len(event["result"]) < 16 * 1024, "the log line holds a bounded preview"
    assert event["result"].startswith("HEAD-OF-BIG-RESULT")
    spilled = done.log().path.parent / event["result_ref"]
    text = spilled.read_text(encoding="utf-8")
    assert len(text) < MAX_RESULT_CHARS + 1000
    assert "characters of a" in text and text.endswith("TAIL-OF-BIG")
    # What the model got back: bounded, head and tail kept.
    sent = json.dumps(done.requests[1].body)
    assert len(sent) < 2 * MB
    assert "HEAD-OF-BIG-RESULT" in sent and "TAIL-OF-BIG" in sent


def test_a_server_that_floods_stderr_writes_it_to_its_file_without_slowing_the_run(
    runs: dict[str, Done],
) -> None:
    done = runs["floods_stderr"]
    assert_outcome(done, 0, "passed", None)
    assert [(t, r) for t, r, _ in tool_results(done)] == [
        ("flood", "flooded 30.0 MB"),
        ("echo", "after the flood"),
    ]
    # Not slowed: a runner that stopped draining stderr would leave the server blocked in its
    # write, and the flood call would end as a tool timeout instead of its result above.
    stderr_log = next(done.out.rglob("test.stderr.log"))
    assert stderr_log.stat().st_size >= 50 * MB
