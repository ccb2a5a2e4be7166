"""`tool_mode: native` through the CLI against the fake model server, in both wire formats: the
tools go out as OpenAI function tools and Anthropic tools, the calls come back streamed, their
results go back by id, the log keeps the ids, and a malformed call or a mapped name is handled.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.llm import wire_name
from tests.e2e.conftest import (
    API_KEY,
    NO_WORKSPACE,
    Done,
    Scenario,
    complete,
    log_schema_errors,
    run_all,
)
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER
from tests.fakes.model_server import Step, reply
from tests.fakes.native_wire import call

WIRES = ("openai", "anthropic")
MODELS = {"openai": "openai:gpt-4.1", "anthropic": "anthropic:claude-sonnet-4-5"}
DOTTED = "notes.echo"
BATCH = 3


def native(*calls: Any, text: str = "") -> Step:
    """A reply whose native tool calls are `calls` (FakeCall)."""
    return reply(text, tool_calls=tuple(calls))


def done(result: str = "done") -> Step:
    return native(call("attempt_completion", {"result": result, "status": "success"}))


def scenario(wire: str, steps: list[Step], *more: str, **task: Any) -> Scenario:
    env = {"ANTHROPIC_API_KEY": API_KEY} if wire == "anthropic" else {}
    return Scenario(
        task={"tool_mode": "native", "prompt": "Copy in.txt to out.txt.", **task},
        steps=steps,
        files={"in.txt": "hello\n"},
        args=["run", "t.yaml", "--model", MODELS[wire], "--out", "OUT", *more],
        env=env,
    )


SCENARIOS: dict[str, Any] = {}
for _wire in WIRES:
    # OpenAI's task says xml and `--tool-mode native` overrides it; Anthropic's says native.
    SCENARIOS[f"{_wire}-copy"] = (
        _wire,
        [
            native(call("read_file", {"path": "in.txt"}), text="Reading first."),
            native(call("write_to_file", {"path": "out.txt", "content": "hello\n"})),
            done("copied"),
        ],
        ("--tool-mode", "native") if _wire == "openai" else (),
        {"tool_mode": "xml"} if _wire == "openai" else {},
    )
    SCENARIOS[f"{_wire}-malformed"] = (
        _wire,
        [native(call("write_to_file", '{"path": "out.txt", "content": "hel')), done("gave up")],
        (),
        {},
    )
    SCENARIOS[f"{_wire}-cut"] = (
        _wire,
        [
            dataclasses.replace(
                native(call("read_file", {"path": "in.txt"}), call("write_to_file", '{"path": "o')),
                stop_reason="length" if _wire == "openai" else "max_tokens",
            ),
            done("went on in smaller steps"),
        ],
        (),
        {},
    )
    SCENARIOS[f"{_wire}-dotted"] = (
        _wire,
        [
            native(call(wire_name(DOTTED), {"text": "round trip"})),
            done("echoed"),
        ],
        (),
        {
            "extensions": {
                "workspace": {"enabled": False},
                "probe": {"cmd": sys.executable, "args": [str(PROBE_SERVER), "--dotted-tool"]},
            }
        },
    )
    SCENARIOS[f"{_wire}-winddown"] = (
        _wire,
        [native(call("read_file", {"path": "in.txt"})), reply("My final report.")],
        (),
        {"limits": {"max_turns": 1}},
    )
SCENARIOS["agents"] = (
    "anthropic",
    [
        native(call("execute_command", {"command": "rm -rf nothing"})),
        native(call("sub_agent", {"agent": "writer", "task": "W-TASK: write notes.md"})),
        done("agent reported"),
    ],
    (),
    {
        "permissions": {"deny": ["execute_command(rm*)"]},
        "agents": {
            "writer": {
                "description": "Writes one file.",
                "prompt": "You write files.",
                "tools": {"allow": ["write_to_file"]},
            }
        },
    },
)
SCENARIOS["auto-known"] = (
    "openai",
    [done("auto native")],
    (),
    {"tool_mode": "auto", **NO_WORKSPACE},
)
SCENARIOS["auto-unknown"] = (
    "openai",
    [complete("auto xml")],
    ("--model", "openai:a-local-model"),
    {"tool_mode": "auto", **NO_WORKSPACE},
)


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    scenarios = {
        name: scenario(wire, steps, *more, **task)
        for name, (wire, steps, more, task) in SCENARIOS.items()
    }
    scenarios["agents"].routes = {
        "W-TASK": [
            native(call("write_to_file", {"path": "notes.md", "content": "hello"})),
            done("wrote notes.md"),
        ]
    }
    # In batches: eleven runs at once on a busy 2-core machine would pass the per-run bound.
    names, finished = list(scenarios), {}
    for start in range(0, len(names), BATCH):
        batch = {name: scenarios[name] for name in names[start : start + BATCH]}
        finished.update(run_all(batch, module_dir))
    return finished


def bodies(run: Done) -> list[dict[str, Any]]:
    return [r.body for r in run.requests if r.wire in WIRES]


def tool_names(body: dict[str, Any], wire: str) -> list[str]:
    if wire == "openai":
        return [t["function"]["name"] for t in body["tools"]]
    return [t["name"] for t in body["tools"]]


def results_sent(body: dict[str, Any], wire: str) -> list[dict[str, Any]]:
    """The tool results of the request's last message(s), as {id, content, is_error}."""
    if wire == "openai":
        return [
            {"id": m["tool_call_id"], "content": m["content"]}
            for m in body["messages"]
            if m["role"] == "tool"
        ]
    last = body["messages"][-1]
    return [
        {"id": b["tool_use_id"], "content": b["content"], "is_error": b.get("is_error", False)}
        for b in last["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


@pytest.mark.parametrize("wire", WIRES)
def test_a_native_session_reads_writes_and_completes_through_the_tool(
    runs: dict[str, Done], wire: str
) -> None:
    run = runs[f"{wire}-copy"]
    assert run.code == 0, run.explain()
    assert run.task()["status"] == "passed" and run.task()["result"] == "copied"
    assert (run.root / "w" / "out.txt").read_text(encoding="utf-8") == "hello\n"
    first = bodies(run)[0]
    names = tool_names(first, wire)
    assert "read_file" in names and names[-1] == "attempt_completion"
    assert first["tool_choice"] == ("auto" if wire == "openai" else {"type": "auto"})


@pytest.mark.parametrize("wire", WIRES)
def test_results_go_back_under_the_ids_of_their_calls(runs: dict[str, Done], wire: str) -> None:
    run = runs[f"{wire}-copy"]
    second = bodies(run)[1]
    (result,) = results_sent(second, wire)
    expected_id = "call_0" if wire == "openai" else "toolu_0"
    assert result["id"] == expected_id and "hello" in result["content"]
    assistant = [m for m in second["messages"] if m["role"] == "assistant"][-1]
    if wire == "openai":
        assert assistant["tool_calls"][0]["id"] == expected_id
        assert assistant["content"] == "Reading first."
    else:
        kinds = [b["type"] for b in assistant["content"]]
        assert kinds == ["text", "tool_use"] and assistant["content"][1]["id"] == expected_id
        assert assistant["content"][1]["input"] == {"path": "in.txt"}


@pytest.mark.parametrize("wire", WIRES)
def test_the_native_prompt_says_nothing_about_xml(runs: dict[str, Done], wire: str) -> None:
    first = bodies(runs[f"{wire}-copy"])[0]
    system = first["messages"][0]["content"] if wire == "openai" else first["system"][0]["text"]
    assert "# TOOL USE" in system and "tool-calling interface" in system
    assert "XML" not in system and "<read_file>" not in system and "# TOOLS\n" not in system


@pytest.mark.parametrize("wire", WIRES)
def test_the_log_records_native_calls_with_their_ids(runs: dict[str, Done], wire: str) -> None:
    run = runs[f"{wire}-copy"]
    record = run.log()
    assert record.header["tool_mode"] == "native"
    calls = run.events("tool_call")
    assert [(c["tool"], c["call_id"]) for c in calls] == [
        ("read_file", "call_0" if wire == "openai" else "toolu_0"),
        ("write_to_file", "call_0" if wire == "openai" else "toolu_0"),
    ]
    assistant = [m for m in run.events("message") if m["role"] == "assistant"]
    assert assistant[0]["tool_calls"][0]["name"] == "read_file"
    results = [m for m in run.events("message") if m.get("tool_results")]
    assert results[0]["tool_results"][0]["id"] == calls[0]["call_id"]
    assert log_schema_errors(record.path) == []


@pytest.mark.parametrize("wire", WIRES)
def test_malformed_json_arguments_become_an_error_naming_the_tool(
    runs: dict[str, Done], wire: str
) -> None:
    run = runs[f"{wire}-malformed"]
    assert run.code == 0, run.explain()
    assert not (run.root / "w" / "out.txt").exists()
    (result,) = results_sent(bodies(run)[1], wire)
    assert "The write_to_file call was not run" in result["content"]
    assert "not valid JSON" in result["content"]
    if wire == "anthropic":
        assert result["is_error"] is True
    assert run.events("tool_call") == []


@pytest.mark.parametrize("wire", WIRES)
def test_a_native_call_cut_at_the_output_limit_is_not_run_and_keeps_its_id(
    runs: dict[str, Done], wire: str
) -> None:
    run = runs[f"{wire}-cut"]
    assert run.code == 0, run.explain()
    assert [e["tool"] for e in run.events("tool_call")] == ["read_file"]
    # Every call of the cut reply is answered under its own id (the APIs refuse a missing one).
    read, cut = results_sent(bodies(run)[1], wire)
    assert "hello" in str(read["content"])
    assert "output token limit" in str(cut["content"]) and "smaller steps" in str(cut["content"])
    assert "not valid JSON" not in str(cut["content"])
    warnings = [e["message"] for e in run.events("warning")]
    assert any("cut at the output limit" in w and "write_to_file" in w for w in warnings)


@pytest.mark.parametrize("wire", WIRES)
def test_a_name_the_provider_refuses_is_mapped_and_mapped_back(
    runs: dict[str, Done], wire: str
) -> None:
    run = runs[f"{wire}-dotted"]
    assert run.code == 0, run.explain()
    sent = tool_names(bodies(run)[0], wire)
    assert DOTTED not in sent and wire_name(DOTTED) in sent
    assert all(
        len(name) <= 64 and name.replace("_", "a").replace("-", "a").isalnum() for name in sent
    )
    (event,) = run.events("tool_call")
    assert event["tool"] == DOTTED and "round trip" in event["result"]
    # The history names the call by its wire name again.
    second = json.dumps(bodies(run)[1]["messages"])
    assert wire_name(DOTTED) in second


def test_tool_mode_on_the_command_line_overrides_the_task(runs: dict[str, Done]) -> None:
    run = runs["openai-copy"]  # its task says tool_mode: xml
    assert run.log().header["task"]["tool_mode"] == "native"
    assert "tools" in bodies(run)[0]


@pytest.mark.parametrize("wire", WIRES)
def test_the_final_report_at_a_limit_offers_no_tool_call(runs: dict[str, Done], wire: str) -> None:
    run = runs[f"{wire}-winddown"]
    assert run.task()["status"] == "budget_exceeded", run.explain()
    assert run.task()["result"] == "My final report."
    last = bodies(run)[-1]
    # The tools are still described (the history calls them), but none may be called.
    assert "read_file" in tool_names(last, wire)
    assert last["tool_choice"] == ("none" if wire == "openai" else {"type": "none"})
    (result,) = results_sent(last, wire)
    assert "hello" in result["content"]


def test_auto_picks_native_for_a_model_the_table_knows(runs: dict[str, Done]) -> None:
    run = runs["auto-known"]
    assert run.code == 0, run.explain()
    assert run.log().header["tool_mode"] == "native" and "tools" in bodies(run)[0]


def test_auto_stays_xml_for_a_model_the_table_does_not_know(runs: dict[str, Done]) -> None:
    run = runs["auto-unknown"]
    assert run.code == 0, run.explain()
    assert run.task()["result"] == "auto xml"
    assert "tool_mode" not in run.log().header and "tools" not in bodies(run)[0]


def test_log_show_shows_the_completion_and_the_calls_that_did_not_run(
    runs: dict[str, Done],
) -> None:
    from runner.sessionlog import show_text

    assert '[call attempt_completion] {"result": "copied"' in show_text(
        runs["openai-copy"].log().path
    )
    shown = show_text(runs["anthropic-malformed"].log().path)
    assert "The write_to_file call was not run" in shown and "not valid JSON" in shown


def test_permissions_and_sub_agents_work_in_native_mode(runs: dict[str, Done]) -> None:
    run = runs["agents"]
    assert run.code == 0, run.explain()
    assert run.task()["result"] == "agent reported"
    assert (run.root / "w" / "notes.md").read_text(encoding="utf-8") == "hello"
    parent = next(r for r in run.logs() if not r.header.get("parent_session_id"))
    (child,) = [r for r in run.logs() if r.header.get("parent_session_id")]
    assert child.header["tool_mode"] == "native"
    denied, agent = [e for e in parent.events if e["type"] == "tool_call"]
    assert denied["is_error"] and "denied by the permission rule" in denied["result"]
    assert agent["child_session_id"] == child.session_id and agent["call_id"] == "toolu_0"
    (result,) = results_sent(bodies(run)[1], "anthropic")
    assert result["id"] == "toolu_0" and result["is_error"] is True
    child_request = next(b for b in bodies(run) if "W-TASK" in json.dumps(b["messages"][0]))
    assert tool_names(child_request, "anthropic") == ["write_to_file", "attempt_completion"]
