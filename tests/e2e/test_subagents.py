"""Sub-agents through the CLI (DESIGN section 13), with the agents of the shipped example.

One run: the parent starts a reader and a writer in one reply; the fake model server holds each
child's first request until the other has arrived, so they only both get answers when they run
at the same time. The reader then calls a tool it may not call and `sub_agent` itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.sessionlog import SessionRecord
from tests.e2e.conftest import (
    REPO,
    Done,
    Scenario,
    call,
    clean_env,
    complete,
    default_args,
    log_schema_errors,
    start,
)
from tests.fakes.model_server import FakeModelServer, reply

EXAMPLE = REPO / "examples" / "tasks" / "docs-with-agents.yaml"
READER_TASK = "R-TASK: which endpoints does app.py define?"
WRITER_TASK = "W-TASK: write notes.md saying hello"


def example_agents() -> dict[str, Any]:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return dict(data["agents"])


def two_children() -> str:
    return "\n".join(
        [
            "I will ask both agents at once.",
            call("sub_agent", agent="reader", task=READER_TASK),
            call("sub_agent", agent="writer", task=WRITER_TASK),
        ]
    )


@pytest.fixture(scope="module")
def run(module_dir: Path) -> tuple[Done, FakeModelServer]:
    routes = {
        "R-TASK": [
            # 3 requests: the parent's first and both children's first.
            reply(call("read_file", path="app.py"), hold_until=3),
            reply(call("write_to_file", path="x.md", content="no")),
            reply(call("sub_agent", agent="reader", task="nested")),
            complete("app.py defines /items and /proxy"),
        ],
        "W-TASK": [
            reply(call("write_to_file", path="notes.md", content="hello"), hold_until=3),
            complete("wrote notes.md"),
        ],
    }
    steps = [reply(two_children()), complete("both agents reported")]
    task = {
        "prompt": "Document the app.",
        "agents": example_agents(),
        "limits": {"max_turns": 5},
    }
    files = {"app.py": "@app.get('/items')\ndef items(): ...\n"}
    with FakeModelServer(steps, routes=routes) as server:
        scenario = Scenario(task=task, files=files, args=default_args("-v"))
        done = start(scenario, module_dir, server).wait()
    return done, server


def test_with_v_each_sub_agents_turns_show_under_its_parent(
    run: tuple[Done, FakeModelServer],
) -> None:
    done, _ = run
    turns = [line.split()[1:4] for line in done.stdout.splitlines() if line.startswith("TURN")]
    assert ["t", ">", "reader"] in turns and ["t", ">", "writer"] in turns, done.stdout
    assert any(turn[:2] == ["t", "turn=1"] for turn in turns), done.stdout  # the parent's own


def parent_and_children(done: Done) -> tuple[SessionRecord, dict[str, SessionRecord]]:
    logs = done.logs()
    (parent,) = [r for r in logs if not r.header.get("parent_session_id")]
    children = {str(r.header["parent_call"]["agent"]): r for r in logs if r is not parent}
    return parent, children


def request_for(done: Done, marker: str) -> dict[str, Any]:
    for request in done.requests:
        messages = request.body["messages"]
        if marker in str(messages[1]["content"]):
            return dict(request.body)
    raise AssertionError(f"no request with {marker!r}")


def test_the_run_passes(run: tuple[Done, FakeModelServer]) -> None:
    done, _ = run
    assert done.code == 0, done.explain()
    assert done.task()["result"] == "both agents reported"


def test_two_sub_agent_calls_of_one_reply_run_at_the_same_time(
    run: tuple[Done, FakeModelServer],
) -> None:
    done, server = run
    # Each child's first answer waited for the third request: with children one after the
    # other, the first child's hold would have timed out.
    assert server.hold_timeouts == 0, done.explain()
    assert len(done.requests) == 8


def test_a_child_prompt_has_its_role_and_lists_only_its_tools(
    run: tuple[Done, FakeModelServer],
) -> None:
    done, _ = run
    system = request_for(done, "R-TASK")["messages"][0]["content"]
    listed = {line[3:] for line in system.splitlines() if line.startswith("## ")}
    assert listed == {"read_file", "list_files", "search_files", "attempt_completion"}
    assert "You investigate a code base and report facts" in system
    assert "careful, senior software engineer" not in system  # the default ROLE is replaced
    parent_system = done.requests[0].body["messages"][0]["content"]
    assert "## sub_agent" in parent_system and "- reader: Reads code" in parent_system


def test_a_denied_tool_and_a_recursive_sub_agent_call_get_error_results(
    run: tuple[Done, FakeModelServer],
) -> None:
    done, _ = run
    _, children = parent_and_children(done)
    calls = done.events("tool_call", children["reader"])
    by_tool = {c["tool"]: c for c in calls}
    assert not by_tool["read_file"]["is_error"]
    assert by_tool["write_to_file"]["is_error"]
    assert "not allowed for sub-agent 'reader'" in by_tool["write_to_file"]["result"]
    assert by_tool["sub_agent"]["is_error"]
    assert "cannot start sub-agents" in by_tool["sub_agent"]["result"]
    assert not (done.root / "w" / "x.md").exists()
    assert (done.root / "w" / "notes.md").read_text(encoding="utf-8") == "hello"


def test_the_parent_gets_both_results_in_call_order(run: tuple[Done, FakeModelServer]) -> None:
    done, _ = run
    last = done.requests[-1].body["messages"][-1]["content"]
    first = last.index("[sub_agent] Result:\napp.py defines /items and /proxy")
    second = last.index("[sub_agent] Result:\nwrote notes.md")
    # The calls' order (tests/run/turn/test_batch.py: whatever order they end).
    assert first < second


def test_the_children_totals_roll_up_into_the_task(run: tuple[Done, FakeModelServer]) -> None:
    done, _ = run
    parent, children = parent_and_children(done)
    calls = [e for r in done.logs() for e in r.events if e["type"] == "model_call"]
    tokens = sum(c["usage"]["input_tokens"] + c["usage"]["output_tokens"] for c in calls)
    assert done.task()["tokens"] == tokens
    assert parent.end["totals"]["turns"] == 2  # type: ignore[index]  # turns stay per session
    assert sorted(done.task()["child_sessions"]) == sorted(r.session_id for r in children.values())
    out = done.testcase().findtext("system-out") or ""
    assert all(r.session_id in out for r in children.values())


def test_child_logs_link_to_the_parent_and_its_calls(run: tuple[Done, FakeModelServer]) -> None:
    done, _ = run
    parent, children = parent_and_children(done)
    for index, name in enumerate(["reader", "writer"]):
        header = children[name].header
        assert header["parent_session_id"] == parent.session_id
        assert header["parent_call"]["index"] == index
        assert header["parent_call"]["turn"] == 1
        assert children[name].end["status"] == "passed"  # type: ignore[index]
    named = [c.get("child_session_id") for c in done.events("tool_call", parent)]
    assert named == [children["reader"].session_id, children["writer"].session_id]
    for record in done.logs():
        assert log_schema_errors(record.path) == []


def test_log_show_indents_the_children_under_their_calls(
    run: tuple[Done, FakeModelServer],
) -> None:
    done, _ = run
    parent, children = parent_and_children(done)
    shown = subprocess.run(
        [sys.executable, "-m", "runner", "log", "show", str(parent.path)],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(done.root),
        timeout=60,
    ).stdout
    reader_at = shown.index(f"    session {children['reader'].session_id}")
    writer_at = shown.index(f"    session {children['writer'].session_id}")
    assert reader_at < writer_at < shown.index("\n--- ASSISTANT (turn 2)")
    exported = subprocess.run(
        [sys.executable, "-m", "runner", "log", "export", str(parent.path), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(done.root),
        timeout=60,
    ).stdout
    markdown = subprocess.run(
        [sys.executable, "-m", "runner", "log", "export", str(parent.path), "--format", "markdown"],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(done.root),
        timeout=60,
    ).stdout
    assert f"> # Session {children['reader'].session_id}" in markdown
    document = json.loads(exported)
    nested = [e["child"]["header"]["session_id"] for e in document["events"] if "child" in e]
    assert nested == [children["reader"].session_id, children["writer"].session_id]
