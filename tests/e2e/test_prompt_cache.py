"""The rolling prompt cache end to end (DESIGN section 16): an Anthropic session of 20 turns
through the CLI, against the fake server modelling Anthropic's cache from the requests' marks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Done, Scenario, complete, start, tool_reply
from tests.fakes.model_server import FakeModelServer

MODEL = "anthropic:claude-sonnet-4-5"
TURNS = 20
NOTES = "".join(f"line {n}: some notes the agent reads again and again\n" for n in range(60))


def marks(body: dict[str, Any]) -> list[tuple[str, int]]:
    """Where a request's cache_control marks sit: ("system", i) or (role, message index)."""
    found = [("system", i) for i, b in enumerate(body["system"]) if "cache_control" in b]
    for index, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list) and any("cache_control" in block for block in content):
            found.append((message["role"], index))
    return found


def run(root: Path, mode: str | None = None) -> Done:
    steps = [tool_reply("read_file", path="notes.txt") for _ in range(TURNS - 1)]
    server = FakeModelServer([*steps, complete()], prompt_cache=True).start()
    env = {"ANTHROPIC_BASE_URL": server.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-e2e"}
    if mode is not None:
        env["AGENT_RUNNER_ANTHROPIC_PROMPT_CACHE"] = mode
    scenario = Scenario(
        task={"prompt": "Read notes.txt until you know it."},
        files={"notes.txt": NOTES},
        args=["run", "t.yaml", "--model", MODEL, "--out", "OUT"],
        env=env,
    )
    try:
        return start(scenario, root, server=server).wait()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def rolling(tmp_path_factory: pytest.TempPathFactory) -> Done:
    return run(tmp_path_factory.mktemp("rolling"))


@pytest.fixture(scope="module")
def system_only(tmp_path_factory: pytest.TempPathFactory) -> Done:
    return run(tmp_path_factory.mktemp("system"), "system")


def test_each_request_carries_rolling_marks_on_the_latest_turns(rolling: Done) -> None:
    assert rolling.code == 0, rolling.explain()
    bodies = [r.body for r in rolling.requests if r.wire == "anthropic"]
    assert len(bodies) == TURNS
    for body in bodies:
        found = marks(body)
        last = len(body["messages"]) - 1
        users = [i for i, m in enumerate(body["messages"]) if m["role"] == "user"]
        assert len(found) <= 4
        assert found[0] == ("system", 0)
        assert found[1:] == [("user", i) for i in users[-3:]]
        assert found[-1] == ("user", last)


def test_from_turn_three_most_input_tokens_are_cache_reads(rolling: Done) -> None:
    calls = rolling.events("model_call")
    assert len(calls) == TURNS
    usage = [call["usage"] for call in calls]
    assert usage[0]["cache_read_tokens"] == 0 and usage[0]["cache_write_tokens"] > 0
    for turn in usage[2:]:
        prompt = turn["input_tokens"] + turn["cache_read_tokens"] + turn["cache_write_tokens"]
        assert turn["cache_read_tokens"] > prompt / 2, usage
    # Each turn writes about what the last one added, never its whole history again.
    assert usage[-1]["cache_write_tokens"] < usage[-1]["cache_read_tokens"] / 5


def test_cache_tokens_reach_the_summary_and_junit_and_are_priced(rolling: Done) -> None:
    usage = [call["usage"] for call in rolling.events("model_call")]
    read = sum(u["cache_read_tokens"] for u in usage)
    write = sum(u["cache_write_tokens"] for u in usage)
    totals = rolling.summary()["totals"]
    task = rolling.task()
    assert (task["cache_read_tokens"], task["cache_write_tokens"]) == (read, write)
    assert (totals["cache_read_tokens"], totals["cache_write_tokens"]) == (read, write)
    properties = {p.get("name"): p.get("value") for p in rolling.junit().iter("property")}
    assert properties["cache_read_tokens"] == str(read)
    assert properties["cache_write_tokens"] == str(write)
    # claude-sonnet-4-5: input $3, output $15, cache read $0.30, cache write $3.75 per million.
    fresh = sum(u["input_tokens"] for u in usage)
    out = sum(u["output_tokens"] for u in usage)
    expected = (fresh * 3 + out * 15 + read * 0.30 + write * 3.75) / 1e6
    assert totals["cost_usd"] == pytest.approx(expected, abs=1e-6)


def test_without_rolling_marks_every_turn_pays_for_its_history(
    rolling: Done, system_only: Done
) -> None:
    assert system_only.code == 0, system_only.explain()
    for request in system_only.requests:
        assert marks(request.body) == [("system", 0)]
    last_rolling = rolling.events("model_call")[-1]["usage"]
    last_system = system_only.events("model_call")[-1]["usage"]
    assert last_system["input_tokens"] > 5 * last_rolling["input_tokens"]
