"""A reply with thousands of calls: the calls of a reply and the results of a turn are bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.run.turn.replybounds import ResultRoom, split_calls
from runner.toolcall import ToolCall
from tests.e2e.conftest import Done, Scenario, call, complete, run_all
from tests.fakes.model_server import reply

FILE_CHARS = 20_000


def many_reads(count: int) -> str:
    return "\n".join(call("read_file", path="big.txt") for _ in range(count))


SCENARIOS = {
    "calls": Scenario(
        task={"prompt": "Read it."},
        steps=[reply(many_reads(120)), complete()],
        files={"big.txt": "small\n"},
    ),
    "results": Scenario(
        task={"prompt": "Read it."},
        steps=[reply(many_reads(30)), complete()],
        files={"big.txt": ("y" * 99 + "\n") * (FILE_CHARS // 100)},
        env={"AGENT_RUNNER_MAX_TURN_RESULTS_CHARS": "100000"},
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def last_user_message(done: Done) -> str:
    messages = done.requests[-1].body["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def test_calls_past_the_limit_of_a_reply_do_not_run_and_get_an_error_naming_it(
    runs: dict[str, Done],
) -> None:
    done = runs["calls"]
    assert done.code == 0, done.explain()
    assert len(done.events("tool_call")) == 50
    message = last_user_message(done)
    assert "only the first 50 ran" in message and "max_tool_calls_per_reply" in message
    assert "The other 70 did not run (read_file x70)" in message


def test_the_results_of_one_turn_are_bounded_together(runs: dict[str, Done]) -> None:
    done = runs["results"]
    assert done.code == 0, done.explain()
    assert len(done.events("tool_call")) == 30  # every call ran and is in the log
    message = last_user_message(done)
    assert len(message) < 110_000
    assert "max_turn_results_chars" in message


def test_split_calls_keeps_everything_within_the_limit() -> None:
    calls = [ToolCall("read_file", {"path": "a"}) for _ in range(3)]
    assert split_calls(calls, 3) == (calls, None)


def test_a_result_room_cuts_then_leaves_out() -> None:
    room = ResultRoom(10_000)
    assert room.fit("a", "x" * 6_000) == "x" * 6_000
    cut = room.fit("b", "y" * 6_000)
    assert cut.startswith("y" * 3_000) and "max_turn_results_chars" in cut
    assert room.fit("c", "z").startswith("Error: the result of c was left out")
