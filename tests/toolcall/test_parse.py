"""Behaviour of the XML tool-call parser, argument coercion and rendering."""

from __future__ import annotations

from typing import Any

import pytest

from runner.toolcall.reply import (
    REMINDER,
    CallError,
    CoercionError,
    ToolCall,
    coerce_arguments,
    parse_reply,
    render_call,
    render_call_error,
    render_call_errors,
    render_result,
    render_usage,
)
from runner.toolcall.spec import ATTEMPT_COMPLETION, ToolResult, ToolSpec

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    },
)
WRITE_TO_FILE = ToolSpec(
    name="write_to_file",
    description="Write a file.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
TOOLS = {spec.name: spec for spec in (READ_FILE, WRITE_TO_FILE, ATTEMPT_COMPLETION)}


def only_call(text: str, tools: dict[str, ToolSpec] = TOOLS) -> ToolCall:
    reply = parse_reply(text, tools)
    assert reply.errors == [], reply.errors
    assert len(reply.calls) == 1
    return reply.calls[0]


def only_error(text: str, tools: dict[str, ToolSpec] = TOOLS) -> CallError:
    reply = parse_reply(text, tools)
    assert reply.calls == []
    assert len(reply.errors) == 1
    return reply.errors[0]


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# Parsing: where calls are and what they hold.


def test_single_call_gives_its_name_arguments_and_raw_text() -> None:
    text = "<read_file>\n<path>src/main.js</path>\n</read_file>"
    call = only_call(text)
    assert call == ToolCall("read_file", {"path": "src/main.js"})
    assert call.raw == text


def test_several_calls_come_back_in_order_of_appearance() -> None:
    text = (
        "<read_file>\n<path>a</path>\n</read_file>\n"
        "<write_to_file>\n<path>b</path>\n<content>x</content>\n</write_to_file>\n"
        "<read_file>\n<path>c</path>\n</read_file>"
    )
    reply = parse_reply(text, TOOLS)
    assert [(c.name, c.arguments["path"]) for c in reply.calls] == [
        ("read_file", "a"),
        ("write_to_file", "b"),
        ("read_file", "c"),
    ]
    assert not reply.truncated


def test_prose_around_calls_is_kept_as_reasoning() -> None:
    text = "First I look.\n<read_file>\n<path>a</path>\n</read_file>\nThen I decide."
    reply = parse_reply(text, TOOLS)
    assert len(reply.calls) == 1
    assert reply.reasoning == "First I look.\n\nThen I decide."


def test_call_in_a_code_fence_is_recognised_and_the_empty_fence_leaves_the_reasoning() -> None:
    text = "Reading:\n```xml\n<read_file>\n<path>a</path>\n</read_file>\n```\nok"
    reply = parse_reply(text, TOOLS)
    assert reply.calls == [ToolCall("read_file", {"path": "a"})]
    assert reply.reasoning == "Reading:\nok"


def test_call_on_one_line_is_recognised() -> None:
    call = only_call("<read_file><path>a.txt</path><limit>3</limit></read_file>")
    assert call.arguments == {"path": "a.txt", "limit": 3}


def test_tool_name_mentioned_in_prose_is_not_a_call() -> None:
    reply = parse_reply("I will use <read_file> to look, then <write_to_file>.", TOOLS)
    assert reply.items == []
    assert not reply.truncated
    assert reply.reasoning == "I will use <read_file> to look, then <write_to_file>."


def test_tool_named_like_an_html_element_does_not_turn_markup_into_a_call() -> None:
    time = ToolSpec("time", "Now.", obj(zone={"type": "string"}))
    reply = parse_reply("Posted <time><b>today</b></time>.", {"time": time})
    assert reply.items == []
    assert only_call("<time><zone>UTC</zone></time>", {"time": time}).arguments == {"zone": "UTC"}


def test_unknown_first_parameter_in_call_layout_is_reported() -> None:
    error = only_error("<read_file>\n<file>a</file>\n</read_file>")
    assert "Unknown parameter <file>" in error.message


def test_reply_without_calls_has_no_items() -> None:
    reply = parse_reply("All done, I think.", TOOLS)
    assert reply.items == []
    assert reply.reasoning == "All done, I think."


def test_tool_with_no_parameters_is_called_with_empty_arguments() -> None:
    ping = ToolSpec("ping", "Ping.", {"type": "object", "properties": {}})
    assert only_call("<ping>\n</ping>", {"ping": ping}) == ToolCall("ping", {})


def test_tool_names_with_dashes_and_server_prefix_are_recognised() -> None:
    spec = ToolSpec("ctx__resolve-library-id", "Resolve.", obj(name={"type": "string"}))
    call = only_call(
        "<ctx__resolve-library-id>\n<name>x</name>\n</ctx__resolve-library-id>", {spec.name: spec}
    )
    assert call.arguments == {"name": "x"}


# Values that hold markup or code.


def test_html_in_a_value_is_kept_verbatim() -> None:
    html = '<div class="a">\n  <p>Tom &amp; Jerry</p>\n</div>'
    call = only_call(
        f"<write_to_file>\n<path>i.html</path>\n<content>\n{html}\n</content>\n</write_to_file>"
    )
    assert call.arguments["content"] == html


def test_value_may_hold_a_tag_named_like_another_parameter() -> None:
    content = "<config>\n<path>/etc/x</path>\n</config>"
    call = only_call(
        f"<write_to_file>\n<content>\n{content}\n</content>\n<path>c.xml</path>\n</write_to_file>"
    )
    assert call.arguments == {"content": content, "path": "c.xml"}


def test_value_may_hold_its_own_closing_tag_when_no_parameter_follows_it() -> None:
    content = "<doc>\n<content>hi</content>\n<meta>x</meta>\n</doc>"
    call = only_call(
        f"<write_to_file>\n<path>d.xml</path>\n<content>\n{content}\n</content>\n</write_to_file>"
    )
    assert call.arguments["content"] == content


def test_value_may_hold_the_tools_closing_tag_and_a_whole_other_call() -> None:
    content = (
        "Call it like\n<read_file>\n<path>x</path>\n</read_file>\nand </write_to_file> ends it."
    )
    reply = parse_reply(
        f"<write_to_file>\n<path>doc.md</path>\n<content>\n{content}\n</content>\n</write_to_file>",
        TOOLS,
    )
    assert reply.calls == [ToolCall("write_to_file", {"path": "doc.md", "content": content})]


def test_value_keeps_code_with_comparisons_and_generics() -> None:
    code = "if (a < b && c > d) {\n  List<String> xs = new ArrayList<>();\n}"
    call = only_call(
        f"<write_to_file>\n<path>A.java</path>\n<content>\n{code}\n</content>\n</write_to_file>"
    )
    assert call.arguments["content"] == code


# Whitespace.


def test_value_keeps_its_whitespace_except_one_leading_and_one_trailing_newline() -> None:
    call = only_call(
        "<write_to_file>\n<path> a b </path>\n<content>\n\n  x\t\n\n</content>\n</write_to_file>"
    )
    assert call.arguments == {"path": " a b ", "content": "\n  x\t\n"}


def test_crlf_newlines_around_a_value_are_stripped_as_one_newline() -> None:
    call = only_call("<read_file>\r\n<path>\r\na.txt\r\n</path>\r\n</read_file>")
    assert call.arguments == {"path": "a.txt"}


# Cut-off replies.


@pytest.mark.parametrize(
    "tail",
    [
        "<write_to_file>\n<path>a</path>\n<content>\nhalf a fi",
        "<write_to_file>\n<path>a</path>\n<content>x</content>\n",
        "<write_to_file>\n<path>a</path>\n<content>x</content>\n</write_to",
        "<write_to_file>\n<pa",
        "<write_to_file>\n",
    ],
)
def test_reply_cut_off_inside_a_call_is_truncated_and_not_run(tail: str) -> None:
    reply = parse_reply("<read_file>\n<path>first</path>\n</read_file>\nNow:\n" + tail, TOOLS)
    assert reply.truncated
    assert reply.calls == [ToolCall("read_file", {"path": "first"})]
    [error] = reply.errors
    assert error.tool == "write_to_file"
    assert "cut off" in error.message
    assert "again" in error.message
    assert error.raw == tail


def test_complete_reply_is_not_truncated() -> None:
    assert not parse_reply("<read_file>\n<path>a</path>\n</read_file>", TOOLS).truncated


# Malformed calls of known tools.


def test_unknown_parameter_is_named_with_the_allowed_ones() -> None:
    error = only_error("<read_file>\n<path>a</path>\n<file>b</file>\n</read_file>")
    assert error.tool == "read_file"
    assert "Unknown parameter <file>" in error.message
    assert "<path>, <limit>" in error.message


def test_missing_required_parameter_is_named_with_the_usage() -> None:
    error = only_error("<write_to_file>\n<path>a</path>\n</write_to_file>")
    assert "Missing required parameter <content> (string)" in error.message
    assert "<content>string, required</content>" in error.message


def test_missing_parameter_and_bad_value_are_reported_together() -> None:
    error = only_error("<read_file>\n<limit>2.5</limit>\n</read_file>")
    assert "Missing required parameter <path>" in error.message
    assert "<limit>: expected an integer" in error.message


def test_value_without_its_parameter_tag_is_reported() -> None:
    error = only_error("<read_file>\n<path>a</path>\nb.txt\n</read_file>")
    assert "Text outside any parameter tag: 'b.txt'" in error.message


def test_parameter_that_is_never_closed_is_reported() -> None:
    error = only_error("<read_file>\n<path>a.txt\n</read_file>")
    assert "Parameter <path> is not closed" in error.message


def test_parameter_given_twice_is_reported() -> None:
    error = only_error("<read_file>\n<path>a</path>\n<path>b</path>\n</read_file>")
    assert "<path> is given twice" in error.message


def test_extra_parameters_are_accepted_when_the_schema_allows_them() -> None:
    spec = ToolSpec("tag_it", "Tag.", {**obj(), "additionalProperties": {"type": "integer"}})
    assert only_call("<tag_it>\n<n>3</n>\n</tag_it>", {"tag_it": spec}).arguments == {"n": 3}


# Unknown tools.


def test_snake_case_tag_shaped_like_a_call_is_an_unknown_tool_listing_the_tools() -> None:
    text = "Trying:\n<list_files>\n<path>.</path>\n</list_files>\nthen more"
    reply = parse_reply(text, TOOLS)
    [error] = reply.errors
    assert error.tool == "list_files"
    assert "no tool named list_files" in error.message
    assert "attempt_completion, read_file, write_to_file" in error.message
    assert error.raw == "<list_files>\n<path>.</path>\n</list_files>"
    assert reply.reasoning == "Trying:\n\nthen more"


def test_tag_close_to_a_known_name_is_an_unknown_tool() -> None:
    error = only_error("<readfile>\n<path>a</path>\n</readfile>")
    assert error.tool == "readfile"


def test_html_in_prose_is_not_an_unknown_tool() -> None:
    text = "Like this:\n<div>\n<span>hi</span>\n</div>\n<my_widget> inline <x> too"
    reply = parse_reply(text, TOOLS)
    assert reply.items == []


def test_unknown_tool_among_many_lists_the_nearest_names_first() -> None:
    tools = {f"tool_{i:02d}": ToolSpec(f"tool_{i:02d}", "t") for i in range(40)}
    tools["search_code"] = ToolSpec("search_code", "s")
    error = only_error("<search_cod>\n<q>x</q>\n</search_cod>", tools)
    assert "Nearest: search_code" in error.message
    assert "All 41 tools are listed under TOOLS" in error.message
    assert "tool_39" not in error.message


# Coercion by JSON Schema.


@pytest.mark.parametrize("text", ["123", "[1, 2]", "true", '"quoted"', "null", ""])
def test_string_values_are_never_json_parsed(text: str) -> None:
    assert coerce_arguments({"s": text}, obj(s={"type": "string"})) == {"s": text}


@pytest.mark.parametrize(("text", "value"), [("2", 2), (" -7 ", -7), ("3.0", 3), ("+4", 4)])
def test_integer_values_are_parsed(text: str, value: int) -> None:
    result = coerce_arguments({"n": text}, obj(n={"type": "integer"}))
    assert result == {"n": value}
    assert type(result["n"]) is int


@pytest.mark.parametrize("text", ["2.5", "two", "", "1_000", "0x10"])
def test_non_integer_text_is_rejected_for_an_integer(text: str) -> None:
    with pytest.raises(CoercionError, match=r"<n>: expected an integer \(like 42\), got"):
        coerce_arguments({"n": text}, obj(n={"type": "integer"}))


@pytest.mark.parametrize(("text", "value"), [("2.5", 2.5), ("2", 2), ("1e3", 1000.0), (".5", 0.5)])
def test_number_values_are_parsed(text: str, value: float) -> None:
    assert coerce_arguments({"x": text}, obj(x={"type": "number"})) == {"x": value}


@pytest.mark.parametrize("text", ["abc", "nan", "inf", "1e999", "1,5"])
def test_non_number_text_is_rejected_for_a_number(text: str) -> None:
    with pytest.raises(CoercionError, match=r"<x>: expected a number"):
        coerce_arguments({"x": text}, obj(x={"type": "number"}))


@pytest.mark.parametrize(("text", "value"), [("true", True), ("False", False), (" TRUE\n", True)])
def test_boolean_values_are_parsed_case_insensitively(text: str, value: bool) -> None:
    assert coerce_arguments({"b": text}, obj(b={"type": "boolean"})) == {"b": value}


@pytest.mark.parametrize("text", ["yes", "1", ""])
def test_other_text_is_rejected_for_a_boolean(text: str) -> None:
    with pytest.raises(CoercionError, match=r"<b>: expected a boolean \(true or false\)"):
        coerce_arguments({"b": text}, obj(b={"type": "boolean"}))


def test_arrays_and_objects_are_parsed_as_json() -> None:
    schema = obj(a={"type": "array", "items": {"type": "string"}}, o={"type": "object"})
    result = coerce_arguments({"a": '["x", "<y>"]', "o": '{"k": [1, null]}'}, schema)
    assert result == {"a": ["x", "<y>"], "o": {"k": [1, None]}}


def test_array_that_is_not_json_is_rejected_with_the_json_error() -> None:
    schema = obj(a={"type": "array"})
    with pytest.raises(CoercionError, match=r"<a>: expected a JSON array .*Expecting value"):
        coerce_arguments({"a": "x\ny"}, schema)


def test_json_of_the_wrong_kind_is_rejected() -> None:
    with pytest.raises(CoercionError, match=r"<a>: expected a JSON array"):
        coerce_arguments({"a": '{"k": 1}'}, obj(a={"type": "array"}))
    with pytest.raises(CoercionError, match=r"<o>: expected a JSON object"):
        coerce_arguments({"o": "[1]"}, obj(o={"type": "object"}))


def test_array_items_are_validated_against_the_schema() -> None:
    schema = obj(a={"type": "array", "items": {"type": "integer"}})
    with pytest.raises(CoercionError, match=r"<a>\[1\]: 'x' is not of type 'integer'"):
        coerce_arguments({"a": '[1, "x"]'}, schema)


def test_enum_value_must_be_one_of_the_listed_ones() -> None:
    schema = obj(mode={"type": "string", "enum": ["fast", "slow"]}, n={"enum": [1, 2]})
    assert coerce_arguments({"mode": "slow", "n": "2"}, schema) == {"mode": "slow", "n": 2}
    with pytest.raises(CoercionError, match=r"<mode>: expected one of: fast, slow; got 'medium'"):
        coerce_arguments({"mode": "medium"}, schema)


def test_enum_keeps_true_and_one_apart() -> None:
    with pytest.raises(CoercionError, match="expected one of: 1, 2"):
        coerce_arguments({"n": "true"}, obj(n={"enum": [1, 2]}))


@pytest.mark.parametrize(
    "slot",
    [
        {"type": ["integer", "null"]},
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
    ],
)
def test_nullable_slot_takes_null_or_empty_as_none(slot: dict[str, Any]) -> None:
    assert coerce_arguments({"v": "null"}, obj(v=slot)) == {"v": None}
    assert coerce_arguments({"v": ""}, obj(v=slot)) == {"v": None}


def test_nullable_slot_still_coerces_other_values_by_the_other_type() -> None:
    assert coerce_arguments({"v": "5"}, obj(v={"type": ["integer", "null"]})) == {"v": 5}
    with pytest.raises(CoercionError, match="expected an integer"):
        coerce_arguments({"v": "five"}, obj(v={"type": ["integer", "null"]}))


def test_any_of_takes_the_first_branch_that_fits() -> None:
    slot = {"anyOf": [{"type": "integer", "minimum": 10}, {"type": "boolean"}, {"type": "string"}]}
    assert coerce_arguments({"v": "12"}, obj(v=slot)) == {"v": 12}
    assert coerce_arguments({"v": "false"}, obj(v=slot)) == {"v": False}
    assert coerce_arguments({"v": "5"}, obj(v=slot)) == {"v": "5"}


def test_one_of_that_nothing_fits_says_what_each_branch_wanted() -> None:
    slot = {"oneOf": [{"type": "integer"}, {"type": "array"}]}
    assert coerce_arguments({"v": "[1]"}, obj(v=slot)) == {"v": [1]}
    with pytest.raises(CoercionError, match=r"fits none .*an integer.*; or expected a JSON array"):
        coerce_arguments({"v": "x"}, obj(v=slot))


def test_local_refs_are_resolved() -> None:
    schema = {
        **obj(level={"$ref": "#/$defs/Level"}, opts={"$ref": "#/definitions/Opts"}),
        "$defs": {"Level": {"type": "string", "enum": ["low", "high"]}},
        "definitions": {"Opts": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    assert coerce_arguments({"level": "high", "opts": '{"n": 1}'}, schema) == {
        "level": "high",
        "opts": {"n": 1},
    }
    with pytest.raises(CoercionError, match=r"<level>: expected one of: low, high"):
        coerce_arguments({"level": "mid"}, schema)
    with pytest.raises(CoercionError, match=r"<opts>\['n'\]: 'x' is not of type 'integer'"):
        coerce_arguments({"opts": '{"n": "x"}'}, schema)


def test_all_of_parts_decide_the_type() -> None:
    schema = {
        **obj(v={"allOf": [{"$ref": "#/$defs/Name"}, {"maxLength": 5}]}),
        "$defs": {"Name": {"type": "string"}},
    }
    assert coerce_arguments({"v": "123"}, schema) == {"v": "123"}
    with pytest.raises(CoercionError, match="is too long"):
        coerce_arguments({"v": "1234567"}, schema)


def test_untyped_slot_takes_json_or_else_text() -> None:
    schema = obj(v={"description": "anything"})
    assert coerce_arguments({"v": "[1, 2]"}, schema) == {"v": [1, 2]}
    assert coerce_arguments({"v": "hello there"}, schema) == {"v": "hello there"}


def test_constraints_are_validated_and_named() -> None:
    schema = obj(n={"type": "integer", "maximum": 3}, s={"type": "string", "pattern": "^a"})
    with pytest.raises(CoercionError) as caught:
        coerce_arguments({"n": "5", "s": "b"}, schema)
    assert caught.value.problems == [
        "<n>: 5 is greater than the maximum of 3",
        "<s>: 'b' does not match '^a'",
    ]


def test_every_bad_value_is_reported_at_once() -> None:
    schema = obj(n={"type": "integer"}, b={"type": "boolean"})
    with pytest.raises(CoercionError) as caught:
        coerce_arguments({"n": "x", "b": "maybe"}, schema)
    assert [p.split(":")[0] for p in caught.value.problems] == ["<n>", "<b>"]


def test_broken_schema_does_not_stop_coercion() -> None:
    schema = obj(n={"type": "integer", "minimum": "not a number"})
    assert coerce_arguments({"n": "4"}, schema) == {"n": 4}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "string", "not": {"type": "strin"}}}},
        {"type": "object", "properties": {"n": {"type": "string"}}, "required": "nx"},
        {"type": "object", "properties": {"n": {"type": "string", "maxLength": -1}}},
    ],
)
def test_a_broken_schema_makes_up_no_problems(schema: dict[str, object]) -> None:
    # The metaschema check runs only when validation finds a problem; it must still clear them.
    assert coerce_arguments({"n": "4"}, schema) == {"n": "4"}
    assert coerce_arguments({"n": "4"}, schema) == {"n": "4"}  # and from the cache


def test_bad_value_in_a_call_becomes_a_call_error_with_the_usage() -> None:
    error = only_error("<read_file>\n<path>a</path>\n<limit>many</limit>\n</read_file>")
    assert "<limit>: expected an integer (like 42), got 'many'" in error.message
    assert "<limit>integer, optional</limit>" in error.message


# Rendering.


def test_render_call_writes_strings_as_is_and_other_values_as_compact_json() -> None:
    spec = ToolSpec("t_x", "t", obj(s={"type": "string"}, n={"type": "integer"}, a={}))
    call = ToolCall("t_x", {"s": "a<b>", "n": 3, "a": {"k": [1, 2]}})
    assert render_call(call, spec) == '<t_x>\n<s>a<b></s>\n<n>3</n>\n<a>{"k":[1,2]}</a>\n</t_x>'


def test_render_call_puts_multi_line_values_on_their_own_lines() -> None:
    call = ToolCall("write_to_file", {"path": "a", "content": "x\ny\n"})
    text = render_call(call, WRITE_TO_FILE)
    assert (
        text == "<write_to_file>\n<path>a</path>\n<content>\nx\ny\n\n</content>\n</write_to_file>"
    )
    assert only_call(text) == call


@pytest.mark.parametrize(
    "value", ["\n", "\r", "\r\n", "\n\n", "a\nb\r", "\nx\n", "\r\nx", "x\r\n", " \n ", "\rx\r"]
)
def test_values_with_edge_newlines_round_trip(value: str) -> None:
    call = ToolCall("write_to_file", {"path": "a", "content": value})
    assert only_call(render_call(call, WRITE_TO_FILE)) == call


def test_render_call_quotes_a_string_its_untyped_slot_would_read_as_json() -> None:
    spec = ToolSpec("t_x", "t", obj(v={}))
    call = ToolCall("t_x", {"v": "123"})
    assert render_call(call, spec) == '<t_x>\n<v>"123"</v>\n</t_x>'
    assert only_call(render_call(call, spec), {"t_x": spec}) == call


def test_render_usage_shows_each_parameter_with_its_form() -> None:
    assert render_usage(ATTEMPT_COMPLETION) == (
        "<attempt_completion>\n"
        "<result>string, required</result>\n"
        "<status>success|failure, optional</status>\n"
        "</attempt_completion>"
    )


def test_render_result_marks_results_and_errors() -> None:
    assert render_result("read_file", ToolResult("hi")) == "[read_file] Result:\nhi"
    assert render_result("read_file", ToolResult("nope", True)) == "[read_file] Error:\nnope"
    assert render_result("ping", ToolResult("")) == "[ping] Result:\n(no output)"


def test_render_call_errors_gives_one_block_per_error() -> None:
    errors = [CallError("a_b", "bad one"), CallError("c_d", "bad two")]
    assert render_call_error(errors[0]) == "[a_b] Error:\nbad one"
    assert render_call_errors(errors) == "[a_b] Error:\nbad one\n\n[c_d] Error:\nbad two"


def test_reminder_says_no_tool_call_and_its_example_is_a_valid_completion() -> None:
    assert REMINDER.startswith("Your reply contained no tool call.")
    call = only_call(REMINDER)
    assert call.name == "attempt_completion"
    assert call.arguments["status"] == "success"


# Scale: these would take minutes with a quadratic scan.


def test_five_megabyte_value_full_of_decoy_closing_tags_parses() -> None:
    line = '<div><content>x</content><p class="a">row</p></div> </content> <em>\n'
    content = line * (5_000_000 // len(line))
    text = (
        f"<write_to_file>\n<path>big.html</path>\n<content>\n{content}</content>\n</write_to_file>"
    )
    call = only_call(text)
    assert call.arguments["content"] == content[:-1]


def test_five_megabyte_prose_full_of_tags_and_tool_mentions_parses() -> None:
    prose = "See <read_file> and <div>\n<span>x</span>\n</div> and <b>bold</b>.\n" * 80_000
    reply = parse_reply(prose + "<read_file>\n<path>a</path>\n</read_file>", TOOLS)
    assert reply.calls == [ToolCall("read_file", {"path": "a"})]


def test_reply_with_a_hundred_calls_parses_them_all() -> None:
    text = "\n".join(
        f"Step {i}:\n<read_file>\n<path>f{i}.txt</path>\n<limit>{i}</limit>\n</read_file>"
        for i in range(100)
    )
    reply = parse_reply(text, TOOLS)
    assert [c.arguments for c in reply.calls] == [
        {"path": f"f{i}.txt", "limit": i} for i in range(100)
    ]


def test_many_calls_with_an_unknown_parameter_parse_without_rescanning_the_reply() -> None:
    text = "\n".join(
        f"<read_file>\n<path>f{i}</path>\n<bogus>1</bogus>\n</read_file>" for i in range(5000)
    )
    reply = parse_reply(text, TOOLS)
    assert len(reply.errors) == 5000
    assert all("Unknown parameter <bogus>" in e.message for e in reply.errors)
