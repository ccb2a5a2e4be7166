"""Sub-agents when things go wrong: SIGKILL and resume, SIGTERM, a provider error, the parent's
budget, and `limits.max_parallel_agents` (DESIGN section 13)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from runner.sessionlog import SessionRecord, find_sessions, read_session
from tests.e2e.conftest import (
    REACH_S,
    Done,
    Scenario,
    assert_no_process_left,
    call,
    complete,
    kill,
    log_schema_errors,
    start,
    wait_until,
)
from tests.fakes.model_server import FakeModelServer, fault, reply

AGENTS: dict[str, Any] = {
    "reader": {
        "description": "Reads code and answers one question.",
        "prompt": "You investigate and report facts.",
        "tools": {"allow": ["read_file", "list_files"]},
    },
    "writer": {
        "description": "Writes one file.",
        "prompt": "You write files.",
        "tools": {"allow": ["write_to_file"]},
    },
}
READER_TASK = "R-TASK: read the code"
WRITER_TASK = "W-TASK: write the file"


def both() -> Any:
    return reply(
        call("sub_agent", agent="reader", task=READER_TASK)
        + "\n"
        + call("sub_agent", agent="writer", task=WRITER_TASK)
    )


def scenario(**task: Any) -> Scenario:
    return Scenario(task={"prompt": "Use the agents.", "agents": AGENTS, **task})


def sessions(out: Path) -> list[SessionRecord]:
    return [read_session(path) for path in find_sessions(out)]


def split(records: list[SessionRecord]) -> tuple[list[SessionRecord], dict[str, SessionRecord]]:
    parents = [r for r in records if not r.header.get("parent_session_id")]
    children = {r.header["parent_call"]["agent"]: r for r in records if r not in parents}
    return parents, children


@pytest.fixture(scope="module")
def killed(module_dir: Path) -> Path:
    """A run SIGKILLed while the reader hung and after the writer had finished."""
    root = module_dir / "kill"
    routes = {"R-TASK": [fault("stall")], "W-TASK": [complete("wrote the file")]}
    with FakeModelServer([both()], routes=routes) as server:
        run = start(scenario(), root, server)
        try:
            assert server.wait_for_stall(timeout=REACH_S), "the reader's model call never came"

            def writer_ended() -> bool:
                _, children = split(sessions(root / "OUT"))
                return "writer" in children and children["writer"].end is not None

            wait_until(writer_ended, REACH_S, "the writer's end line")
            run.process.send_signal(signal.SIGKILL)
            assert run.process.wait(timeout=30) == -signal.SIGKILL
        finally:
            kill(run.process)
    assert_no_process_left(root)
    return root


@pytest.fixture(scope="module")
def resumed(killed: Path) -> Done:
    with FakeModelServer([complete("finished after the cut")]) as server:
        run = start(Scenario(args=["resume", "OUT", "--out", "OUT"]), killed, server)
        return run.wait()


def test_resume_after_a_kill_during_a_child_finishes_the_task(resumed: Done) -> None:
    assert resumed.code == 0, resumed.explain()
    assert resumed.task()["result"] == "finished after the cut"


def test_resume_records_the_cut_child_as_interrupted_and_keeps_the_finished_one(
    resumed: Done,
) -> None:
    (request,) = resumed.requests  # no child ran again: the one request is the parent's
    last = request.body["messages"][-1]["content"]
    reader = last.index("[sub_agent] Error:\nSub-agent 'reader' was interrupted")
    writer = last.index("[sub_agent] Result:\nwrote the file")
    assert reader < writer  # call order
    parents, children = split(sessions(resumed.out))
    assert len(parents) == 2 and set(children) == {"reader", "writer"}
    assert children["reader"].end is None  # the cut child is left as it was, not resumed
    for record in sessions(resumed.out):
        assert log_schema_errors(record.path) == []


def test_resume_refuses_a_child_log(killed: Path) -> None:
    _, children = split(sessions(killed / "OUT"))
    with FakeModelServer() as server:
        args = ["resume", str(children["reader"].path), "--out", "OUT2"]
        done = start(Scenario(args=args), killed, server).wait()
    assert done.code == 2, done.explain()
    assert "a sub-agent's session; resume its parent" in done.stderr


def test_sigterm_stops_the_children_with_interrupted_logs(module_dir: Path) -> None:
    root = module_dir / "term"
    routes = {"R-TASK": [fault("stall")], "W-TASK": [fault("stall")]}
    with FakeModelServer([both()], routes=routes) as server:
        run = start(scenario(), root, server)
        try:
            wait_until(lambda: len(server.requests) == 3, REACH_S, "both children's model calls")
            assert server.wait_for_stall(timeout=REACH_S)
            run.process.send_signal(signal.SIGTERM)
            done = run.wait()
        finally:
            kill(run.process)
    assert done.code == 143, done.explain()
    parents, children = split(sessions(done.out))
    assert parents[0].end is not None and parents[0].end["status"] == "interrupted"
    for child in children.values():
        assert child.end is not None and child.end["status"] == "interrupted", child.path
    assert_no_process_left(root)


def test_a_child_provider_error_is_its_error_result_and_the_parent_goes_on(
    module_dir: Path,
) -> None:
    routes = {"R-TASK": [fault("unauthorized")], "W-TASK": [complete("wrote")]}
    steps = [both(), complete("went on")]
    with FakeModelServer(steps, routes=routes) as server:
        done = start(scenario(), module_dir / "provider", server).wait()
    assert done.code == 0, done.explain()
    parents, children = split(done.logs())
    calls = done.events("tool_call", parents[0])
    assert calls[0]["is_error"] and "stopped with an error (provider)" in calls[0]["result"]
    assert not calls[1]["is_error"] and calls[1]["result"] == "wrote"
    assert children["reader"].end["status"] == "error"  # type: ignore[index]


def test_a_child_cannot_spend_past_the_parents_token_limit(module_dir: Path) -> None:
    # The parent's first call uses 12 + a few tokens; the child's first, 5000: over the parent's
    # 1000, so the child stops before its second call and the parent stops before its next.
    routes = {"R-TASK": [reply(call("list_files", path="."), input_tokens=5000)]}
    task = {"limits": {"max_tokens": 1000}}
    steps = [reply(call("sub_agent", agent="reader", task=READER_TASK))]
    with FakeModelServer(steps, routes=routes) as server:
        done = start(scenario(**task), module_dir / "budget", server).wait()
    assert done.code == 5, done.explain()
    assert done.task()["kind"] == "tokens"
    assert done.task()["tokens"] > 5000  # the child's tokens are the task's
    _, children = split(done.logs())
    end = children["reader"].end
    assert end is not None and end["status"] == "budget_exceeded"
    assert "the parent's token limit" in end["reason"]
    # Parent, child; no tools-off request for a final report past a token limit.
    assert len(done.requests) == 2


def test_max_parallel_agents_one_runs_the_children_one_after_the_other(
    module_dir: Path,
) -> None:
    # Each child's first answer waits (briefly) for a third request: with one child at a time,
    # the first child's wait runs out, as the same wait never does with two at once.
    held = {"hold_until": 3, "hold_timeout_s": 1.0}
    routes = {
        "R-TASK": [reply(call("list_files", path="."), **held), complete("read")],
        "W-TASK": [reply(call("list_files", path="."), **held), complete("wrote")],
    }
    steps = [both(), complete("done")]
    with FakeModelServer(steps, routes=routes) as server:
        done = start(scenario(limits={"max_parallel_agents": 1}), module_dir / "one", server).wait()
        assert done.code == 0, done.explain()
        assert server.hold_timeouts == 1


def test_max_depth_two_lets_a_child_start_its_own_child(module_dir: Path) -> None:
    routes = {
        "R-TASK": [
            reply(call("sub_agent", agent="writer", task=WRITER_TASK)),
            complete("the writer says: wrote"),
        ],
        "W-TASK": [complete("wrote")],
    }
    steps = [reply(call("sub_agent", agent="reader", task=READER_TASK)), complete("done")]
    agents = {**AGENTS, "reader": {**AGENTS["reader"], "tools": {"allow": ["read_file"]}}}
    task = {"prompt": "Use the agents.", "agents": agents, "limits": {"max_depth": 2}}
    with FakeModelServer(steps, routes=routes) as server:
        done = start(Scenario(task=task), module_dir / "depth", server).wait()
    assert done.code == 0, done.explain()
    _, children = split(done.logs())
    reader, writer = children["reader"], children["writer"]
    assert writer.header["parent_session_id"] == reader.session_id
    reader_system = next(
        r.body["messages"][0]["content"]
        for r in done.requests
        if "R-TASK" in str(r.body["messages"][1]["content"])
    )
    assert "## sub_agent" in reader_system and "## list_files" not in reader_system
    assert sorted(done.task()["child_sessions"]) == sorted([reader.session_id, writer.session_id])
    (call_event,) = done.events("tool_call", reader)
    assert call_event["child_session_id"] == writer.session_id
    assert call_event["result"] == "wrote"
