"""Provider faults through the CLI, on both wire formats: each is retried, compacted or reported.

Every case runs at once (one runner process and one fake model server each) with seeded secrets
in the environment; the last tests scan every case's artifacts for them and for leftover processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.run.turn.compaction import SUMMARY_PROMPT
from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    assert_no_process_left,
    call,
    complete,
    junit_schema_problems,
    needs_shared_junit,
)
from tests.fakes.model_server import RecordedRequest, fault, reply
from tests.hardening.conftest import (
    LENGTH_STOP,
    WIRES,
    assert_reported,
    event_kinds,
    run_matrix,
    secret_leaks,
)

pytestmark = pytest.mark.slow

MAX_ATTEMPTS = 4
IDLE_S = 0.5
RETRY_AFTER_S = 0.15
"""Under the suite's retry-after cap (0.2 s), so the server's value is used as it is."""
SUMMARY = "Summary: the agent thought twice and called no tool."
CUT_CALL = "I will write the file now.\n<write_to_file>\n<path>a.txt</path>\n<content>hello wor"


def _cases(wire: str) -> dict[str, Scenario]:
    return {
        # One run, four recoverable statuses in a row (each is one failed attempt).
        "statuses": Scenario(
            task=NO_WORKSPACE,
            steps=[
                fault("rate_limit", retry_after=str(RETRY_AFTER_S)),
                fault("server_error"),
                fault("unavailable"),
                fault("overloaded"),
                complete("recovered"),
            ],
            env={"AGENT_RUNNER_RETRY__MAX_ATTEMPTS": "5"},
        ),
        "overloaded_forever": Scenario(
            task=NO_WORKSPACE,
            default=fault("overloaded"),
            env={"AGENT_RUNNER_RETRY__MAX_ATTEMPTS": str(MAX_ATTEMPTS)},
        ),
        # One run, three broken streams in a row: each one's partial text would end the task.
        "streams": Scenario(
            task=NO_WORKSPACE,
            steps=[
                fault("cut", text=call("attempt_completion", result="cut")),
                fault("drop", text=call("attempt_completion", result="drop")),
                fault("stall", text=call("attempt_completion", result="stall")),
                complete("whole"),
            ],
            env={"AGENT_RUNNER_RETRY__IDLE_TIMEOUT_S": str(IDLE_S)},
        ),
        "unauthorized": Scenario(task=NO_WORKSPACE, default=fault("unauthorized")),
        "context_length": Scenario(
            task=NO_WORKSPACE,
            steps=[
                reply("Let me think about it first."),
                reply("Still thinking."),
                fault("context_length"),
                reply(SUMMARY),  # the forced summary
                complete("after compaction"),  # the one retry
            ],
        ),
        "cut_mid_call": Scenario(
            task={"prompt": "Write a.txt."},
            steps=[reply(CUT_CALL, stop_reason=LENGTH_STOP[wire]), complete("gave up writing")],
        ),
    }


CASES = {f"{wire}-{name}": (s, wire) for wire in WIRES for name, s in _cases(wire).items()}
NAMES = sorted(CASES)


def system_of(request: RecordedRequest) -> str:
    """The system prompt of a request, in either wire format."""
    if request.wire == "anthropic":
        return str(request.body["system"][0]["text"])
    return str(request.body["messages"][0]["content"])


def each_wire(name: str) -> list[str]:
    return [f"{wire}-{name}" for wire in WIRES]


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_matrix(CASES, module_dir)


@pytest.mark.parametrize("case", each_wire("statuses"))
def test_429_500_503_and_529_are_each_retried_once_and_the_task_passes(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert_reported(done, 0, "passed")
    assert len(done.requests) == 5
    retries = done.events("retry")
    assert [r["status"] for r in retries] == [429, 500, 503, 529]
    assert [r["attempt"] for r in retries] == [1, 2, 3, 4]
    (model_call,) = done.events("model_call")
    assert model_call["retries"] == 4
    assert done.task()["result"] == "recovered"
    assert event_kinds(done) == ["message"] + ["retry"] * 4 + ["message", "model_call", "end"]


@pytest.mark.parametrize("case", each_wire("statuses"))
def test_a_429_waits_exactly_its_retry_after_when_under_the_cap(
    runs: dict[str, Done], case: str
) -> None:
    (rate_limited, *_) = runs[case].events("retry")
    assert rate_limited["wait_s"] == pytest.approx(RETRY_AFTER_S)
    assert "429" in rate_limited["reason"]


@pytest.mark.parametrize("case", each_wire("overloaded_forever"))
def test_529_past_the_retry_budget_exits_4_with_an_error_naming_the_fix(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert_reported(done, 4, "error")
    assert len(done.requests) == MAX_ATTEMPTS
    assert [r["status"] for r in done.events("retry")] == [529] * (MAX_ATTEMPTS - 1)
    reason = done.task()["reason"]
    assert f"after {MAX_ATTEMPTS} attempts" in reason and "retry.max_attempts" in reason
    # Every retry before the give-up is in the log, then the end line.
    assert event_kinds(done) == ["message"] + ["retry"] * (MAX_ATTEMPTS - 1) + ["end"]


@pytest.mark.parametrize("case", each_wire("streams"))
def test_cut_dropped_and_stalled_streams_are_retried_and_their_partial_text_is_unused(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert_reported(done, 0, "passed")
    assert len(done.requests) == 4
    retries = done.events("retry")
    assert [r["status"] for r in retries] == [None, None, None]
    # The stall is cut by the idle timeout, not by the request timeout.
    assert "idle" in retries[2]["reason"] and f"{IDLE_S:g} s" in retries[2]["reason"]
    assert done.task()["result"] == "whole"
    (assistant,) = [m for m in done.events("message") if m["role"] == "assistant"]
    assert "whole" in assistant["content"]


@pytest.mark.parametrize("case", each_wire("unauthorized"))
def test_a_401_exits_4_after_one_request_naming_the_key_variable(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert_reported(done, 4, "error")
    assert len(done.requests) == 1
    key_env = "ANTHROPIC_API_KEY" if case.startswith("anthropic") else "OPENAI_API_KEY"
    assert f"{key_env} was refused" in done.task()["reason"]
    assert done.events("retry") == []


@pytest.mark.parametrize("case", each_wire("context_length"))
def test_a_context_length_400_compacts_by_summary_then_the_retry_passes(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert_reported(done, 0, "passed")
    assert len(done.requests) == 5
    assert system_of(done.requests[3]) == SUMMARY_PROMPT
    compactions = done.events("compaction")
    assert compactions and compactions[-1]["kind"] == "summary"
    assert compactions[-1]["summary"] == SUMMARY
    assert done.task()["result"] == "after compaction"


@pytest.mark.parametrize("case", each_wire("cut_mid_call"))
def test_a_reply_cut_inside_a_tool_call_does_not_run_it_and_the_model_is_told(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert_reported(done, 0, "passed")
    assert not (done.root / "w" / "a.txt").exists()
    assert done.events("tool_call") == []
    (model_call, _) = done.events("model_call")
    assert model_call["stop_reason"] == LENGTH_STOP[case.split("-", maxsplit=1)[0]]
    told = done.requests[1].body["messages"][-1]
    content = told["content"]  # Anthropic: text blocks, the last one marked for the cache
    text = content if isinstance(content, str) else "".join(b["text"] for b in content)
    assert told["role"] == "user" and "cut off inside this write_to_file call" in text
    assert done.task()["result"] == "gave up writing"


@pytest.mark.parametrize("case", NAMES)
def test_no_artifact_or_console_line_holds_a_seeded_secret(
    runs: dict[str, Done], case: str
) -> None:
    done = runs[case]
    assert secret_leaks(done.root, done.stdout, done.stderr) == {}


@pytest.mark.parametrize("case", NAMES)
def test_no_process_outlives_its_run(runs: dict[str, Done], case: str) -> None:
    assert_no_process_left(runs[case].root)


@needs_shared_junit
def test_junit_of_every_fault_validates_against_the_jenkins_xsd(runs: dict[str, Done]) -> None:
    problems = {
        case: junit_schema_problems(done.out / "junit.xml")
        for case, done in runs.items()
        if case.startswith("openai")
    }
    assert {case: p for case, p in problems.items() if p is not None} == {}
