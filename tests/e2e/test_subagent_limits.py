"""A sub-agent's own time limit, and its result as the parent's model gets it: masked
(DESIGN sections 7b and 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import Scenario, call, complete, start
from tests.fakes.model_server import FakeModelServer, fault, reply

SECRET = "child-SEEDED-3f9a21c4"
READER: dict[str, Any] = {
    "description": "Reads code and answers one question.",
    "prompt": "You investigate and report facts.",
    "tools": {"allow": ["read_file"]},
}


def ask_reader() -> Any:
    return reply(call("sub_agent", agent="reader", task="R-TASK: read the code"))


def test_a_sub_agent_stops_at_its_own_time_limit_and_the_parent_goes_on(
    tmp_path: Path,
) -> None:
    agents = {"reader": {**READER, "limits": {"timeout": "1s"}}}
    task = {"prompt": "Use the agents.", "agents": agents}
    routes = {"R-TASK": [fault("stall")]}
    with FakeModelServer([ask_reader(), complete("went on")], routes=routes) as server:
        done = start(Scenario(task=task), tmp_path, server).wait()
    assert done.code == 0, done.explain()
    (parent,) = [r for r in done.logs() if not r.header.get("parent_session_id")]
    (result,) = done.events("tool_call", parent)
    assert result["is_error"]
    assert "stopped at its time limit" in result["result"]
    assert "time limit reached (1s)" in result["result"]


def test_a_secret_in_a_sub_agents_result_reaches_the_parents_model_masked(
    tmp_path: Path,
) -> None:
    task = {"prompt": "Use the agents.", "agents": {"reader": READER}, "secrets": ["E2E_CHILD"]}
    routes = {"R-TASK": [complete(f"the key is {SECRET}")]}
    scenario = Scenario(task=task, env={"E2E_CHILD": SECRET})
    with FakeModelServer([ask_reader(), complete("went on")], routes=routes) as server:
        done = start(scenario, tmp_path, server).wait()
    assert done.code == 0, done.explain()
    parent_next = done.requests[-1].body["messages"]
    assert "the key is" in str(parent_next)
    assert SECRET not in str(parent_next)
