"""The loop's side of the deferred catalogue: find_tools answered from the shelf (what it loads,
its answer, its error and its log fields), every other call passed on whole, the native tool list
narrowed to what is loaded, and the loaded tools announced after a compaction."""

from __future__ import annotations

from typing import Any

import pytest

from runner.llm import Message, NativeTools
from runner.prompt import ToolShelf
from runner.prompt.catalogue import found_text, loaded_announcement
from runner.run.turn.shelf import ShelfExecutor, announce_loaded, narrowed
from runner.toolcall import ToolResult, ToolSpec

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
DEFERRED = [
    ToolSpec("get_issue", "Get one issue.", SCHEMA, server="forge"),
    ToolSpec("run_query", "Run a query on the forge.", SCHEMA, server="forge"),
    ToolSpec("get_label", "Get one label.", SCHEMA, server="forge"),
]
OWN = ToolSpec("read_file", "Read a file.", SCHEMA, server="workspace")


class Inner:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        return ToolResult(f"ran {name}", log_fields={"x": 1})


class Events:
    def __init__(self) -> None:
        self.messages: list[tuple[str, str, int, dict[str, Any]]] = []

    def message(self, role: str, content: str, turn: int, **fields: Any) -> None:
        self.messages.append((role, content, turn, fields))


async def test_every_other_call_goes_to_the_inner_executor_whole() -> None:
    inner = Inner()
    executor = ShelfExecutor(inner, ToolShelf.of(DEFERRED), False, ["read_file"])
    result = await executor.call("read_file", {"path": "a"})
    assert result == ToolResult("ran read_file")
    assert inner.calls == [("read_file", {"path": "a"})]


@pytest.mark.parametrize("native", [False, True])
async def test_find_tools_loads_the_matches_and_answers_with_them(native: bool) -> None:
    inner, shelf = Inner(), ToolShelf.of(DEFERRED)
    offered = {"read_file", "get_issue", "get_label"}
    executor = ShelfExecutor(inner, shelf, native, offered)
    result = await executor.call("find_tools", {"query": "get_label get_issue"})
    assert shelf.loaded == ["get_label", "get_issue"]
    found = [DEFERRED[2], DEFERRED[0]]
    assert result.text == found_text(found, "get_label get_issue", native, offered)
    assert result.is_error is False
    assert result.log_fields == {"loaded_tools": ["get_label", "get_issue"]}
    assert inner.calls == []


async def test_find_tools_answers_in_the_executors_own_mode_and_offer() -> None:
    shelf = ToolShelf.of(DEFERRED)
    xml = await ShelfExecutor(Inner(), shelf, False, {"get_issue"}).call(
        "find_tools", {"query": "get_issue"}
    )
    assert (
        xml.text.startswith("Loaded: get_issue. Call them as shown:") and "## get_issue" in xml.text
    )
    native = await ShelfExecutor(Inner(), shelf, True, {"get_issue"}).call(
        "find_tools", {"query": "get_issue"}
    )
    assert native.text == "Loaded: get_issue. Their definitions are in your tool list from now on."


@pytest.mark.parametrize("arguments", [{}, {"query": ""}, {"query": "nothing-like-it"}])
async def test_a_find_tools_that_matches_nothing_is_an_error_that_loads_and_logs_nothing(
    arguments: dict[str, Any],
) -> None:
    shelf = ToolShelf.of(DEFERRED)
    result = await ShelfExecutor(Inner(), shelf, False, set()).call("find_tools", arguments)
    assert result.is_error is True
    assert result.text.startswith("No deferred tool matches")
    assert result.log_fields == {}
    assert shelf.loaded == []


def test_the_native_list_keeps_what_is_not_deferred_and_what_is_loaded() -> None:
    shelf = ToolShelf.of(DEFERRED, loaded=["run_query"])
    native = NativeTools((OWN, *DEFERRED), choice="none")
    narrow = narrowed(native, shelf)
    assert narrow is not None
    assert [s.name for s in narrow.specs] == ["read_file", "run_query"]
    assert narrow.choice == "none"


def test_without_a_shelf_or_a_native_list_nothing_is_narrowed() -> None:
    native = NativeTools((OWN, *DEFERRED))
    assert narrowed(native, None) is native
    assert narrowed(native, ToolShelf()) is native
    assert narrowed(None, ToolShelf.of(DEFERRED)) is None


@pytest.mark.parametrize("native", [False, True])
def test_after_a_compaction_the_loaded_tools_are_named_again_in_context_and_log(
    native: bool,
) -> None:
    shelf = ToolShelf.of(DEFERRED, loaded=["get_label"])
    messages = [Message("user", "task"), Message("assistant", "done some")]
    events = Events()
    announce_loaded(messages, events, shelf, native, ["get_label"], 7)
    text = loaded_announcement(shelf, native, {"get_label"})
    assert messages[-1] == Message("user", text)
    assert events.messages == [("user", text, 7, {})]
    assert ("## get_label" in text) is not native


@pytest.mark.parametrize("shelf", [None, ToolShelf(), ToolShelf.of(DEFERRED)])
def test_with_nothing_loaded_a_compaction_announces_nothing(shelf: ToolShelf | None) -> None:
    messages = [Message("user", "task")]
    events = Events()
    announce_loaded(messages, events, shelf, False, [], 3)
    assert messages == [Message("user", "task")] and events.messages == []
