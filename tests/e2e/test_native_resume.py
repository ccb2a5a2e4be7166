"""A native session killed with SIGKILL resumes in native mode with its call ids intact, in both
wire formats; a call cut off before it ran is answered on resume; `--tool-mode xml` on a native
log is refused; a native log replays.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from runner.sessionlog import SessionRecord, find_sessions, read_session
from tests.e2e.conftest import (
    API_KEY,
    REACH_S,
    Done,
    Scenario,
    assert_no_process_left,
    kill,
    log_schema_errors,
    run_one,
    start,
    wait_until,
)
from tests.e2e.test_native_tools import MODELS, WIRES, done, native
from tests.fakes.model_server import FakeModelServer, fault, reply
from tests.fakes.native_wire import call

COUNT_RUN = "echo ran >> ran.txt"


def sessions(out: Path) -> list[SessionRecord]:
    return [read_session(path) for path in find_sessions(out)]


def scenario(wire: str, *args: str) -> Scenario:
    return Scenario(
        task={"tool_mode": "native", "prompt": "Count one run."},
        args=list(args) or ["run", "t.yaml", "--model", MODELS[wire], "--out", "OUT"],
        env={"ANTHROPIC_API_KEY": API_KEY},
    )


def last_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body["messages"])


@pytest.fixture(scope="module", params=WIRES)
def killed(request: pytest.FixtureRequest, module_dir: Path) -> tuple[str, Path, SessionRecord]:
    """A native run SIGKILLed while its second model call hung."""
    wire: str = request.param
    root = module_dir / wire
    steps = [native(call("execute_command", {"command": COUNT_RUN})), fault("stall")]
    with FakeModelServer(steps) as server:
        run = start(scenario(wire), root, server)
        try:
            assert server.wait_for_stall(timeout=REACH_S), "the second model call never came"
            run.process.send_signal(signal.SIGKILL)
            assert run.process.wait(timeout=30) == -signal.SIGKILL
        finally:
            kill(run.process)
    assert_no_process_left(root)
    (record,) = sessions(root / "OUT")
    return wire, root, record


@pytest.fixture(scope="module")
def refused(killed: tuple[str, Path, SessionRecord]) -> Done:
    wire, root, _ = killed
    with FakeModelServer([done("never")]) as server:
        resume = scenario(wire, "resume", "OUT", "--out", "OUT", "--tool-mode", "xml")
        return start(resume, root, server).wait()


@pytest.fixture(scope="module")
def resumed(killed: tuple[str, Path, SessionRecord], refused: Done) -> Done:
    wire, root, _ = killed
    with FakeModelServer([done("counted once")]) as server:
        return start(scenario(wire, "resume", "OUT", "--out", "OUT"), root, server).wait()


def test_a_native_log_refuses_to_resume_in_xml_mode(refused: Done) -> None:
    assert refused.code == 2, refused.explain()
    assert "written in tool_mode native" in refused.stderr
    assert "--tool-mode xml" in refused.stderr
    assert refused.requests == []


def test_the_killed_native_session_resumes_and_passes(
    resumed: Done, killed: tuple[str, Path, SessionRecord]
) -> None:
    assert resumed.code == 0, resumed.explain()
    assert resumed.task()["result"] == "counted once"
    _, root, record = killed
    assert (root / "w" / "ran.txt").read_text(encoding="utf-8") == "ran\n"
    (child,) = [r for r in sessions(resumed.out) if r.session_id != record.session_id]
    assert child.parent_id == record.session_id and child.header["tool_mode"] == "native"
    for log in sessions(resumed.out):
        assert log_schema_errors(log.path) == []


def test_the_resumed_request_holds_the_call_and_its_result_by_id(
    resumed: Done, killed: tuple[str, Path, SessionRecord]
) -> None:
    wire = killed[0]
    body = resumed.requests[0].body
    assert "tools" in body
    messages = last_messages(body)
    if wire == "openai":
        (assistant,) = [m for m in messages if m.get("tool_calls")]
        (result,) = [m for m in messages if m["role"] == "tool"]
        assert result["tool_call_id"] == assistant["tool_calls"][0]["id"] == "call_0"
        assert messages[-1]["role"] == "user" and "previous run" in messages[-1]["content"]
    else:
        last = messages[-1]["content"]
        assert last[0]["type"] == "tool_result" and last[0]["tool_use_id"] == "toolu_0"
        assert last[-1]["type"] == "text" and "previous run" in last[-1]["text"]


@pytest.fixture(scope="module")
def cut_mid_call(module_dir: Path) -> tuple[Done, SessionRecord]:
    """Killed while its only call ran: the log ends with an assistant message with a call and no
    result; the resumed request must answer that call."""
    root = module_dir / "mid-call"
    command = "echo started > started.txt; sleep 60"
    steps = [native(call("execute_command", {"command": command}))]
    with FakeModelServer(steps) as server:
        run = start(scenario("anthropic"), root, server)
        try:
            wait_until((root / "w" / "started.txt").exists, REACH_S, "the command to start")
            run.process.send_signal(signal.SIGKILL)
            run.process.wait(timeout=30)
        finally:
            kill(run.process)
    (record,) = sessions(root / "OUT")
    with FakeModelServer([done("resumed")]) as server:
        resumed = start(scenario("anthropic", "resume", "OUT", "--out", "OUT"), root, server).wait()
    return resumed, record


def test_a_call_cut_off_before_its_result_is_answered_on_resume(
    cut_mid_call: tuple[Done, SessionRecord],
) -> None:
    resumed, record = cut_mid_call
    kinds = [e["type"] for e in record.events]
    assert kinds == ["message", "message", "model_call"]  # no tool_call, no result message
    assert record.events[1]["tool_calls"][0]["id"] == "toolu_0"
    assert resumed.code == 0, resumed.explain()
    last = resumed.requests[0].body["messages"][-1]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["tool_use_id"] == "toolu_0"
    assert last[0]["is_error"] is True and "Not run" in last[0]["content"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_native_log_replays(module_dir: Path, wire: str) -> None:
    root = module_dir / f"replay-{wire}"
    steps = [
        native(call("write_to_file", {"path": "out.txt", "content": "one\n"})),
        done("wrote"),
    ]
    first = run_one(Scenario(**{**scenario(wire).__dict__, "steps": steps}), root)
    assert first.code == 0, first.explain()
    (log,) = find_sessions(first.out)
    root = first.root  # run_one runs in root/run; the replay reuses its folder and workdir
    (root / "w" / "out.txt").unlink()
    replay = Scenario(
        task={"tool_mode": "xml", "prompt": "Count one run."},
        args=["run", "t.yaml", "--model", f"replay:{log}", "--out", "REPLAY"],
    )
    again = run_one(replay, root.parent)
    assert again.code == 0, again.explain()
    assert (root / "w" / "out.txt").read_text(encoding="utf-8") == "one\n"
    (replayed,) = sessions(root / "REPLAY")
    assert replayed.header["tool_mode"] == "native"
    calls = [e for e in replayed.events if e["type"] == "tool_call"]
    assert [(c["tool"], c["call_id"]) for c in calls] == [
        ("write_to_file", "call_0" if wire == "openai" else "toolu_0")
    ]
    assert again.requests == []


def test_a_forced_compaction_keeps_every_native_result_next_to_its_call(module_dir: Path) -> None:
    files = {f"{name}.txt": f"{name}: a file of some length\n" * 16 for name in "abc"}
    steps = [
        *(native(call("read_file", {"path": f"{name}.txt"}), text="Next file.") for name in "abc"),
        fault("context_length"),
        reply("Summary: files a, b and c were read."),  # the forced summary
        done("read them all"),  # the one retry
    ]
    run = run_one(
        Scenario(**{**scenario("anthropic").__dict__, "steps": steps, "files": files}),
        module_dir / "compaction",
    )
    assert run.code == 0, run.explain()
    assert [e["kind"] for e in run.events("compaction")] == ["summary"]
    retried = run.requests[5].body
    assert "tools" in retried
    called: set[str] = set()
    for message in retried["messages"]:
        for block in message["content"]:
            if block["type"] == "tool_use":
                called.add(block["id"])
            if block["type"] == "tool_result":
                assert block["tool_use_id"] in called, "a result whose call was summarised away"
    assert log_schema_errors(run.log().path) == []
