"""Compaction end to end: a small context window, and a provider's context-length error."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.run.turn.compaction import CLEARED, SUMMARY_PROMPT
from tests.e2e.conftest import (
    Done,
    Scenario,
    call,
    complete,
    log_schema_errors,
    run_all,
)
from tests.fakes.model_server import RecordedRequest, Step, fault, reply

FILES = {f"{name}.txt": f"{name}: a file of some length\n" * 16 for name in "abcd"}
# Long reasoning makes each turn about 1600 tokens, so clearing tool results is not enough and
# the history must be summarised. The system prompt with the workspace tools is ~1300 tokens
# (DESIGN 28): three turns fit under 80% of an 8500-token window, four do not.
REASONING = "I read the files one at a time and keep careful notes on what each one holds. " * 75
SUMMARY = "Summary: files a and b were read; both are short."
TINY_WINDOW = 8500
OUT = ["--out", "OUT"]


def reading(name: str, reasoning: str = REASONING) -> Step:
    return reply(reasoning + call("read_file", path=f"{name}.txt"))


SCENARIOS = {
    "tiny_window": Scenario(
        task={"prompt": "Read every file."},
        files=FILES,
        steps=[
            *(reading(name) for name in "abcd"),
            reply(SUMMARY),  # the summary call, made before the fifth turn
            complete("read them all"),
        ],
        extra_files={
            "config.yaml": f"models:\n  gpt-tiny: {{context_window: {TINY_WINDOW}}}\n",
        },
        args=["run", "t.yaml", "--model", "openai:gpt-tiny", "--config", "config.yaml", *OUT],
    ),
    "context_error": Scenario(
        task={"prompt": "Read every file."},
        files=FILES,
        steps=[
            *(reading(name, "Next file.\n") for name in "abc"),
            fault("context_length"),
            reply(SUMMARY),  # the forced summary
            complete("read them all"),  # the one retry
        ],
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def system_of(request: RecordedRequest) -> str:
    messages = request.body["messages"]
    return str(messages[0]["content"])


def test_a_small_window_clears_tool_results_then_summarises_and_the_task_completes(
    runs: dict[str, Done],
) -> None:
    done = runs["tiny_window"]
    assert done.code == 0, done.explain()
    kinds = [e["kind"] for e in done.events("compaction")]
    assert kinds == ["clear_tool_results", "summary"]
    # The fifth request is the one counted summary call; the next turn sees its result.
    assert system_of(done.requests[4]) == SUMMARY_PROMPT
    sent = done.requests[5].body["messages"]
    assert sent[1] == {"role": "user", "content": "Read every file."}
    assert any(SUMMARY in m["content"] for m in sent)
    assert done.log().end["totals"]["turns"] == 5  # type: ignore[index]


def test_compaction_keeps_the_first_user_message_and_logs_the_new_context(
    runs: dict[str, Done],
) -> None:
    for event in runs["tiny_window"].events("compaction"):
        assert event["messages"][0] == {"role": "user", "content": "Read every file."}
        assert event["after_tokens"] < event["before_tokens"]
    cleared = runs["tiny_window"].events("compaction")[0]["messages"]
    assert cleared[2] == {"role": "user", "content": CLEARED}


def test_a_context_length_error_compacts_and_retries_once(runs: dict[str, Done]) -> None:
    done = runs["context_error"]
    assert done.code == 0, done.explain()
    (compaction,) = done.events("compaction")
    assert compaction["kind"] == "summary" and compaction["summary"] == SUMMARY
    assert system_of(done.requests[4]) == SUMMARY_PROMPT
    failed, retried = done.requests[3].body["messages"], done.requests[5].body["messages"]
    assert len(retried) < len(failed)
    assert done.task()["result"] == "read them all"


def test_logs_with_compaction_events_match_the_json_schema(runs: dict[str, Done]) -> None:
    for done in runs.values():
        assert log_schema_errors(done.log().path) == []
