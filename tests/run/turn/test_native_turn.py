"""The loop's side of native tool calls: the mode a task runs in, results by call id, and the
context kept valid through compaction and the wind-down (runner.run.turn.native)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError
from runner.llm import Message, NativeCall, NativeResult, NativeTools, Reply, Usage
from runner.run.turn.budget import Budget
from runner.run.turn.compaction import Compactor
from runner.run.turn.native import (
    INTERRUPTED,
    NOT_RUN,
    NativeModel,
    answer_open_calls,
    append_user,
    logged_tool_mode,
    results_message,
    with_tool_mode,
)
from runner.settings import ModelInfo
from runner.task.loader import load_tasks
from runner.toolcall import CallError, ToolCall, ToolSpec
from tests.llm.conftest import make_settings

KNOWN = ModelInfo(context_window=1000)


class FakeLLM:
    provider = "fake"
    model = "m"

    def __init__(self, native: bool, info: ModelInfo | None, required: str | None = None):
        self.info = info
        if native:
            self.native_tools = True
        if required:
            self.required_tool_mode = required
        self.seen: list[dict[str, Any]] = []

    async def complete(self, system: str, messages: Sequence[Message], **kw: Any) -> Reply:
        self.seen.append(kw)
        return Reply("a summary", Usage(1, 1), "stop", 0.0, 0, "m")


def task(tmp_path: Path, mode: str) -> Any:
    path = tmp_path / "t.yaml"
    path.write_text(f"name: t\nprompt: p\ntool_mode: {mode}\n", encoding="utf-8")
    (loaded,) = load_tasks([path])
    return loaded


@pytest.mark.parametrize(
    ("mode", "native", "info", "flag", "expected"),
    [
        ("xml", True, KNOWN, None, "xml"),
        ("native", True, None, None, "native"),
        ("auto", True, KNOWN, None, "native"),
        ("auto", True, None, None, "xml"),  # a local server's model the table does not know
        ("auto", True, ModelInfo(context_window=9, native_tools=False), None, "xml"),
        ("auto", False, KNOWN, None, "xml"),  # a provider without tool calling
        ("xml", True, KNOWN, "native", "native"),  # --tool-mode wins
        ("native", True, KNOWN, "auto", "native"),
    ],
)
def test_the_mode_a_task_runs_in(
    tmp_path: Path, mode: str, native: bool, info: Any, flag: Any, expected: str
) -> None:
    settings = make_settings(tool_mode=flag)
    chosen = with_tool_mode(task(tmp_path, mode), FakeLLM(native, info), settings)  # type: ignore[arg-type]
    assert chosen.spec.tool_mode == expected


def test_native_on_a_provider_without_tool_calling_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tool_mode: native needs a provider with tool calling"):
        with_tool_mode(task(tmp_path, "native"), FakeLLM(False, KNOWN), make_settings())  # type: ignore[arg-type]


def test_a_replayed_log_dictates_its_mode_and_refuses_another_flag(tmp_path: Path) -> None:
    llm = FakeLLM(True, None, required="native")
    chosen = with_tool_mode(task(tmp_path, "xml"), llm, make_settings())  # type: ignore[arg-type]
    assert chosen.spec.tool_mode == "native"
    with pytest.raises(ConfigError, match="written in native mode"):
        with_tool_mode(task(tmp_path, "xml"), llm, make_settings(tool_mode="xml"))  # type: ignore[arg-type]


def test_resume_keeps_the_logged_mode_and_refuses_another(tmp_path: Path) -> None:
    record = type("R", (), {"header": {"tool_mode": "native"}})()
    resumed = logged_tool_mode(task(tmp_path, "xml"), record, make_settings(), "log.jsonl")
    assert resumed.spec.tool_mode == "native"
    old = type("R", (), {"header": {}})()
    assert (
        logged_tool_mode(task(tmp_path, "native"), old, make_settings(), "x").spec.tool_mode
        == "xml"
    )
    with pytest.raises(ConfigError, match="written in tool_mode native"):
        logged_tool_mode(task(tmp_path, "xml"), record, make_settings(tool_mode="xml"), "log")


ASKED = Message(
    "assistant",
    "",
    (NativeCall("a", "read_file", "{}"), NativeCall("b", "x", "{"), NativeCall("c", "y", "{}")),
)


def test_every_call_gets_a_result_in_order_and_unanswered_ones_are_marked_not_run() -> None:
    answers = [
        (ToolCall("read_file", {}, call_id="a"), "[read_file] Result:\nok", False),
        (CallError("x", "bad json", call_id="b"), "[x] Error:\nbad json", True),
    ]
    message = results_message(ASKED, answers, "too many calls")
    assert message.content == "too many calls"
    assert message.results == (
        NativeResult("a", "read_file", "[read_file] Result:\nok", False),
        NativeResult("b", "x", "[x] Error:\nbad json", True),
        NativeResult("c", "y", NOT_RUN, True),
    )


def test_calls_left_open_are_answered_by_the_next_user_message() -> None:
    message = answer_open_calls([Message("user", "t"), ASKED], "go on")
    assert [r.id for r in message.results] == ["a", "b", "c"]
    assert {r.content for r in message.results} == {INTERRUPTED}
    assert answer_open_calls([Message("user", "t")], "go on") == Message("user", "go on")


def test_the_wind_down_notice_keeps_the_results_it_is_folded_into() -> None:
    results = (NativeResult("a", "read_file", "ok"),)
    messages = [Message("user", "t"), ASKED, Message("user", "", results=results)]
    assert append_user(messages, "finish now") == {}
    assert messages[-1] == Message("user", "finish now", results=results)
    messages = [Message("user", "t"), ASKED]
    native = append_user(messages, "limit reached")
    assert [r["id"] for r in native["tool_results"]] == ["a", "b", "c"]


@pytest.mark.anyio
async def test_the_native_model_offers_the_tools_with_choice_none_unless_given_them() -> None:
    inner = FakeLLM(True, KNOWN)
    tools = NativeTools((ToolSpec("read_file", "Read."),))
    model = NativeModel(inner, tools)  # type: ignore[arg-type]
    await model.complete("s", [Message("user", "x")])
    await model.complete("s", [Message("user", "x")], tools=tools)
    assert inner.seen[0]["tools"].choice == "none" and inner.seen[1]["tools"] is tools


def native_history(turns: int, size: int) -> list[Message]:
    messages = [Message("user", "the task")]
    for turn in range(turns):
        call = NativeCall(f"c{turn}", "read_file", '{"path": "a"}')
        result = NativeResult(f"c{turn}", "read_file", "x" * size)
        messages += [Message("assistant", "", (call,)), Message("user", "", results=(result,))]
    return messages


@pytest.mark.anyio
async def test_compaction_clears_native_results_but_keeps_their_ids_and_drops_orphans() -> None:
    events: list[dict[str, Any]] = []

    class Sink:
        def compaction(self, turn: int, **fields: Any) -> None:
            events.append(fields)

    messages = native_history(6, 2000)
    box = Compactor(
        llm=FakeLLM(True, KNOWN),  # type: ignore[arg-type]
        system="s",
        context_window=1000,
        events=Sink(),
        budget=Budget(),
        cost_of=lambda usage: 0.0,
    )
    await box.compact(messages, turn=6, force=True)
    cleared = events[0]["messages"][2]
    assert (
        cleared["tool_results"][0]["id"] == "c0"
        and "cleared" in cleared["tool_results"][0]["content"]
    )
    # After the summary, no result is left without its call.
    ids = {c.id for m in messages for c in m.calls}
    assert all(r.id in ids for m in messages for r in m.results)
    assert messages[1].content.startswith("Summary of the session so far")
