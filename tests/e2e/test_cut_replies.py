"""Replies cut at the output limit, both wire formats: the cut call does not run, the model is
told to go on in smaller steps, and replies that are only cut calls end the task."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Done, Scenario, call, complete, kill, start
from tests.fakes.model_server import FakeModelServer, Step, reply

WIRES = {
    "openai": ("openai:gpt-4.1", "length"),
    "anthropic": ("anthropic:claude-sonnet-4-5", "max_tokens"),
}
# A write_to_file call whose content never ends: the reply stopped at max_tokens.
CUT_WRITE = (
    "I will write the report now.\n<write_to_file>\n<path>report.md</path>\n<content>\n# Rep"
)


def run_wire(root: Path, wire: str, steps: list[Step]) -> Done:
    model, _ = WIRES[wire]
    server = FakeModelServer(steps).start()
    scenario = Scenario(
        task={"prompt": "Write report.md.", "limits": {"max_turns": 8}},
        files={"notes.txt": "notes\n"},
        env={"ANTHROPIC_BASE_URL": server.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-e2e"},
        args=["run", "t.yaml", "--model", model, "--out", "OUT"],
    )
    started = start(scenario, root, server=server)
    try:
        return started.wait()
    finally:
        kill(started.process)
        server.stop()


def last_user_text(request: object) -> str:
    body = getattr(request, "body", {})
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content)
    return str(content)


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_call_cut_at_the_output_limit_is_not_run_and_the_model_is_told(
    tmp_path: Path, wire: str
) -> None:
    stop = WIRES[wire][1]
    read_then_cut = call("read_file", path="notes.txt") + "\n" + CUT_WRITE
    done = run_wire(
        tmp_path,
        wire,
        [
            reply(read_then_cut, stop_reason=stop),
            reply(call("write_to_file", path="report.md", content="# Report\nshort\n")),
            complete("wrote it in smaller steps"),
        ],
    )
    assert done.code == 0, done.explain()
    # The complete call before the cut ran; the cut write did not (the file is the second one).
    calls = [(e["tool"], e["is_error"]) for e in done.events("tool_call")]
    assert calls == [("read_file", False), ("write_to_file", False)]
    told = last_user_text(done.requests[1])
    assert "output token limit" in told and "smaller steps" in told
    assert "write_to_file" in told
    warnings = [e["message"] for e in done.events("warning")]
    assert any("cut at the output limit" in w and "write_to_file" in w for w in warnings)
    assert (done.root / "w" / "report.md").read_text(encoding="utf-8").startswith("# Report\nshort")


@pytest.mark.parametrize("wire", list(WIRES))
def test_replies_that_are_only_cut_calls_end_the_task_instead_of_looping(
    tmp_path: Path, wire: str
) -> None:
    stop = WIRES[wire][1]
    done = run_wire(tmp_path, wire, [reply(CUT_WRITE, stop_reason=stop)] * 3)
    assert done.code == 1, done.explain()
    assert len(done.requests) == 3  # three cut replies, then the task gave up: no fourth call
    assert done.events("tool_call") == []
    assert not (done.root / "w" / "report.md").exists()
    assert done.task()["status"] == "failed"


def test_a_reply_cut_before_any_call_is_told_it_was_cut(tmp_path: Path) -> None:
    done = run_wire(
        tmp_path,
        "openai",
        [reply("Let me think about this at great length " * 5, stop_reason="length"), complete()],
    )
    assert done.code == 0, done.explain()
    told = last_user_text(done.requests[1])
    assert "output token limit" in told and "before it called a tool" in told
