"""Native tool calls on the wire: names mapped reversibly, streamed calls assembled, and the
history written in each API's own form (runner.llm.native, runner.llm.providers.native_wire)."""

from __future__ import annotations

from types import SimpleNamespace as NS

from runner.llm import Message, NativeCall, NativeResult, NativeTools, wire_name
from runner.llm.native import ToolNames
from runner.llm.providers.native_wire import (
    AnthropicCalls,
    OpenAICalls,
    anthropic_messages,
    anthropic_tools,
    openai_messages,
    openai_tools,
)
from runner.toolcall import ToolSpec

TOOLS = NativeTools((ToolSpec("fs.read", "Read.", {"type": "object"}), ToolSpec("ok_name", "Ok.")))


def test_allowed_names_go_out_as_they_are() -> None:
    assert wire_name("read_file") == "read_file"
    assert wire_name("a-b_C9") == "a-b_C9"


def test_refused_names_are_made_plain_and_hashed_so_that_they_never_meet() -> None:
    dotted, slashed = wire_name("fs.read"), wire_name("fs/read")
    assert dotted.startswith("fs_read_") and slashed.startswith("fs_read_")
    assert dotted != slashed
    long = wire_name("x." + "y" * 100)
    assert len(long) == 64
    for name in (dotted, slashed, long, wire_name("...")):
        assert name.replace("_", "").replace("-", "").isalnum()


def test_the_mapping_goes_back_to_the_runner_name_and_leaves_unknown_names_alone() -> None:
    names = ToolNames.of(["fs.read", "ok_name"])
    assert names.runner(names.wire("fs.read")) == "fs.read"
    assert names.runner("hallucinated") == "hallucinated"
    assert names.wire("not.offered") == wire_name("not.offered")


def test_openai_tools_carry_the_mapped_names_and_object_schemas() -> None:
    body = openai_tools(TOOLS, TOOLS.names())
    first = body["tools"][0]["function"]
    assert first["name"] == wire_name("fs.read")
    assert first["parameters"] == {"type": "object", "properties": {}}
    assert body["tool_choice"] == "auto"
    idle = NativeTools(TOOLS.specs, "none")
    assert anthropic_tools(idle, idle.names())["tool_choice"] == {"type": "none"}


def test_openai_deltas_are_assembled_by_index() -> None:
    calls = OpenAICalls(TOOLS)

    def delta(index: int, id: str | None, name: str | None, args: str | None) -> NS:
        return NS(index=index, id=id, function=NS(name=name, arguments=args))

    calls.feed([delta(0, "a", wire_name("fs.read"), '{"pa'), delta(1, "b", "ok_", "")])
    calls.feed([delta(1, None, "name", "{}"), delta(0, None, None, 'th": "x"}')])
    assert calls.calls() == (
        NativeCall("a", "fs.read", '{"path": "x"}'),
        NativeCall("b", "ok_name", "{}"),
    )


def test_an_openai_call_without_an_id_gets_one() -> None:
    calls = OpenAICalls(TOOLS)
    calls.feed([NS(index=0, id=None, function=NS(name="ok_name", arguments=None))])
    (call,) = calls.calls()
    assert call.id.startswith("call_") and call.arguments == "{}"


def test_anthropic_tool_use_blocks_are_assembled_from_input_json_deltas() -> None:
    calls = AnthropicCalls(TOOLS)
    block = NS(type="tool_use", id="toolu_1", name=wire_name("fs.read"))
    calls.feed(NS(type="content_block_start", index=1, content_block=block))
    calls.feed(NS(type="content_block_start", index=0, content_block=NS(type="text")))
    for piece in ('{"path"', ': "y"}'):
        delta = NS(type="input_json_delta", partial_json=piece)
        calls.feed(NS(type="content_block_delta", index=1, delta=delta))
    assert calls.calls() == (NativeCall("toolu_1", "fs.read", '{"path": "y"}'),)


HISTORY = [
    Message("user", "task"),
    Message("assistant", "thinking", (NativeCall("c1", "fs.read", '{"path": "a"}'),)),
    Message("user", "note", results=(NativeResult("c1", "fs.read", "text", True),)),
    Message("assistant", "", (NativeCall("c2", "ok_name", '{"broken'),)),
]


def test_openai_history_has_tool_calls_then_tool_messages_then_the_text() -> None:
    wire = openai_messages("sys", HISTORY, TOOLS.names())
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert wire[2]["tool_calls"][0]["function"]["name"] == wire_name("fs.read")
    assert wire[3] == {"role": "tool", "tool_call_id": "c1", "content": "text"}
    assert (
        wire[5]["content"] is None
        and wire[5]["tool_calls"][0]["function"]["arguments"] == '{"broken'
    )


def test_anthropic_history_has_blocks_with_ids_and_an_object_for_malformed_arguments() -> None:
    wire = anthropic_messages(HISTORY, TOOLS.names())
    assert wire[0] == {"role": "user", "content": [{"type": "text", "text": "task"}]}
    assert wire[1]["content"] == [
        {"type": "text", "text": "thinking"},
        {"type": "tool_use", "id": "c1", "name": wire_name("fs.read"), "input": {"path": "a"}},
    ]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "text", "is_error": True},
        {"type": "text", "text": "note"},
    ]
    assert wire[3]["content"] == [{"type": "tool_use", "id": "c2", "name": "ok_name", "input": {}}]


def test_a_message_record_round_trips_with_its_calls_and_results() -> None:
    for message in HISTORY:
        assert Message.from_record(message.record()) == message
    assert Message.from_record({"role": "user", "content": "x"}) == Message("user", "x")


def test_plain_folds_results_into_text() -> None:
    plain = HISTORY[2].plain()
    assert plain.results == () and plain.content == "[fs.read] Error:\ntext\n\nnote"


def test_anthropic_merges_consecutive_messages_of_one_role_and_never_sends_empty_text() -> None:
    results = (NativeResult("c1", "fs.read", "text"),)
    history = [
        Message("user", "task"),
        Message("assistant", "", HISTORY[1].calls),
        Message("user", "", results=results),
        Message("user", "limit reached"),
        Message("assistant", ""),
    ]
    wire = anthropic_messages(history, TOOLS.names())
    assert [m["role"] for m in wire] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in wire[1]["content"]] == ["tool_use"]
    assert [b["type"] for b in wire[2]["content"]] == ["tool_result", "text"]
    assert wire[3]["content"] == [{"type": "text", "text": "(no text)"}]


def test_repeated_ids_from_a_server_are_made_unique() -> None:
    calls = OpenAICalls(TOOLS)
    calls.feed(
        [
            NS(index=0, id="same", function=NS(name="ok_name", arguments="{}")),
            NS(index=1, id="same", function=NS(name="ok_name", arguments="{}")),
        ]
    )
    first, second = calls.calls()
    assert first.id == "same" and second.id != "same" and second.id.startswith("call_")


def test_arguments_sent_as_an_object_by_a_compatible_server_become_json() -> None:
    calls = OpenAICalls(TOOLS)
    calls.feed([NS(index=0, id="a", function=NS(name="ok_name", arguments={"x": 1}))])
    assert calls.calls()[0].arguments == '{"x": 1}'
