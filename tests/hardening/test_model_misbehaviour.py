"""A model that misbehaves: bad calls come back to it as errors and the session goes on.

Malformed XML, an unknown tool, a wrong argument type and a denied tool are four turns of one run,
each answered with an error the model can act on. A hundred calls in one reply, a 5 MB reply and
a model that never calls a tool are runs of their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.sessionlog import read_session
from runner.toolcall.reply import REMINDER
from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    assert_no_process_left,
    call,
    complete,
    tool_reply,
)
from tests.fakes.model_server import reply
from tests.hardening.conftest import assert_reported, run_matrix, secret_leaks

MALFORMED = "<write_to_file>\n<path>a.txt</path>\n<content>hi</contnet>\n</write_to_file>"
UNKNOWN = "<delete_everything>\n<path>.</path>\n</delete_everything>"
HUNDRED = 100
HUGE_BYTES = 5 * 1024 * 1024
HUGE = ("The model keeps talking at length about nothing in particular. " * 90_000)[:HUGE_BYTES]

pytestmark = pytest.mark.slow

CASES = {
    "misbehaving": (
        Scenario(
            task={"prompt": "Do the task.", "tools": {"deny": ["execute_command"]}},
            files={"notes.txt": "one\ntwo\n"},
            steps=[
                reply(MALFORMED),
                reply(UNKNOWN),
                tool_reply("read_file", path="notes.txt", start_line="first"),
                tool_reply("execute_command", command="touch pwned.txt"),
                complete("coped"),
            ],
        ),
        "openai",
    ),
    "hundred_calls": (
        Scenario(
            task={"prompt": "Write many files."},
            steps=[
                reply(
                    "Writing them all.\n"
                    + "\n".join(
                        call("write_to_file", path=f"f{i:03}.txt", content=str(i))
                        for i in range(HUNDRED)
                    )
                ),
                complete("wrote them"),
            ],
            # Past the default of 50 calls a reply (tests/hardening/test_reply_bounds.py).
            env={"AGENT_RUNNER_MAX_TOOL_CALLS_PER_REPLY": str(HUNDRED)},
        ),
        "openai",
    ),
    "huge_reply": (
        Scenario(
            task=NO_WORKSPACE,
            steps=[reply(HUGE, chunks=2000), complete("after the flood")],
        ),
        "openai",
    ),
    "silent": (
        Scenario(task=NO_WORKSPACE, default=reply("Everything is fine already, nothing to do.")),
        "anthropic",
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_matrix(CASES, module_dir)


def told(done: Done, request: int) -> str:
    """The last user message of one request: what the model was told after its reply."""
    message = done.requests[request].body["messages"][-1]
    assert message["role"] == "user"
    return str(message["content"])


def test_every_bad_call_is_answered_with_an_error_and_the_task_still_passes(
    runs: dict[str, Done],
) -> None:
    done = runs["misbehaving"]
    assert_reported(done, 0, "passed")
    assert done.task()["result"] == "coped"
    assert len(done.requests) == 5
    assert not (done.root / "w" / "a.txt").exists()
    assert not (done.root / "w" / "pwned.txt").exists()


def test_malformed_xml_is_not_run_and_the_model_is_shown_the_usage(runs: dict[str, Done]) -> None:
    text = told(runs["misbehaving"], 1)
    assert "[write_to_file] Error:" in text and "was not run" in text
    assert "<content>" in text  # the usage shows the parameter it got wrong


def test_an_unknown_tool_is_named_with_the_available_tools(runs: dict[str, Done]) -> None:
    text = told(runs["misbehaving"], 2)
    assert "There is no tool named delete_everything" in text
    assert "read_file" in text


def test_a_string_for_an_integer_names_the_parameter_and_its_type(runs: dict[str, Done]) -> None:
    text = told(runs["misbehaving"], 3)
    assert "[read_file] Error:" in text and "<start_line>" in text and "integer" in text


def test_a_denied_tool_gets_an_error_result_naming_the_policy(runs: dict[str, Done]) -> None:
    text = told(runs["misbehaving"], 4)
    assert text.startswith("[execute_command] Error:")
    assert "not allowed by the task's tool policy" in text and "tools.deny" in text


def test_a_denied_tool_is_not_offered_among_the_available_tools(runs: dict[str, Done]) -> None:
    assert "execute_command" not in told(runs["misbehaving"], 2)


def test_bad_calls_are_logged_as_messages_and_never_reach_a_server(runs: dict[str, Done]) -> None:
    done = runs["misbehaving"]
    # The denied call is the one logged tool call: refused by the runner, not run.
    (denied,) = done.events("tool_call")
    assert denied["tool"] == "execute_command" and denied["is_error"]
    roles = [m["role"] for m in done.events("message")]
    assert roles == ["user"] + ["assistant", "user"] * 4 + ["assistant"]


def test_a_hundred_calls_in_one_reply_run_in_order_with_one_result_message(
    runs: dict[str, Done],
) -> None:
    done = runs["hundred_calls"]
    assert_reported(done, 0, "passed")
    calls = done.events("tool_call")
    assert [c["arguments"]["path"] for c in calls] == [f"f{i:03}.txt" for i in range(HUNDRED)]
    assert not any(c["is_error"] for c in calls)
    assert all((done.root / "w" / f"f{i:03}.txt").is_file() for i in range(HUNDRED))
    assert [m["role"] for m in done.events("message")] == ["user", "assistant", "user", "assistant"]
    results = told(done, 1)
    assert results.count("[write_to_file] Result:") == HUNDRED
    end = done.log().end
    assert end is not None and end["totals"]["tool_calls"] == HUNDRED


def test_a_5mb_reply_is_logged_whole_and_the_log_reads_back(runs: dict[str, Done]) -> None:
    done = runs["huge_reply"]
    assert_reported(done, 0, "passed")
    record = read_session(done.log().path)
    assert not record.torn
    (huge, _) = [m for m in done.events("message", record) if m["role"] == "assistant"]
    assert huge["content"] == HUGE
    assert told(done, 1) == REMINDER
    # The reply went back to the model whole, once.
    assert done.requests[1].body["messages"][-2]["content"] == HUGE


def test_replies_without_a_tool_call_fail_the_task_after_three_with_exit_1(
    runs: dict[str, Done],
) -> None:
    done = runs["silent"]
    assert_reported(done, 1, "failed")
    assert len(done.requests) == 3
    assert done.task()["kind"] == "no_tool_call"
    reminders = [m for m in done.events("message") if m["content"] == REMINDER]
    assert len(reminders) == 2
    failure = done.testcase().find("failure")
    assert failure is not None


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_artifact_or_console_line_holds_a_seeded_secret(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert secret_leaks(done.root, done.stdout, done.stderr) == {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_process_outlives_its_run(runs: dict[str, Done], case: str) -> None:
    assert_no_process_left(runs[case].root)
