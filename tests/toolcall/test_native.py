"""Native calls' JSON arguments are checked and coerced like XML ones (runner.toolcall.native)."""

from __future__ import annotations

from runner.toolcall import ATTEMPT_COMPLETION, CallError, ToolCall, ToolSpec, native_call

SPEC = ToolSpec(
    "read_file",
    "Read.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
        "required": ["path"],
    },
)
TOOLS = {SPEC.name: SPEC, ATTEMPT_COMPLETION.name: ATTEMPT_COMPLETION}


def test_typed_arguments_pass_and_keep_the_call_id() -> None:
    call = native_call("c1", "read_file", '{"path": "a", "start_line": 3}', TOOLS)
    assert call == ToolCall("read_file", {"path": "a", "start_line": 3})
    assert isinstance(call, ToolCall) and call.call_id == "c1"


def test_a_number_sent_as_a_string_is_coerced_by_the_schema() -> None:
    call = native_call("c1", "read_file", '{"path": "a", "start_line": "3"}', TOOLS)
    assert isinstance(call, ToolCall) and call.arguments["start_line"] == 3


def test_malformed_json_is_an_error_naming_the_tool_and_its_parameters() -> None:
    error = native_call("c9", "read_file", '{"path": "a', TOOLS)
    assert isinstance(error, CallError) and error.call_id == "c9"
    assert error.message.startswith("The read_file call was not run:")
    assert "not valid JSON" in error.message and "- path (string, required)" in error.message


def test_a_json_value_that_is_no_object_is_an_error() -> None:
    error = native_call("c", "read_file", '["a"]', TOOLS)
    assert isinstance(error, CallError) and "must be a JSON object, not list" in error.message


def test_unknown_and_missing_parameters_are_reported_together() -> None:
    error = native_call("c", "read_file", '{"file": "a"}', TOOLS)
    assert isinstance(error, CallError)
    assert "Unknown parameter 'file'" in error.message
    assert "Missing required parameter 'path'" in error.message


def test_a_value_of_the_wrong_type_is_reported() -> None:
    error = native_call("c", "read_file", '{"path": "a", "start_line": "three"}', TOOLS)
    assert isinstance(error, CallError) and "start_line" in error.message


def test_an_unknown_tool_lists_the_offered_ones_but_not_the_unlisted() -> None:
    error = native_call("c", "rm_rf", "{}", TOOLS, unlisted={"read_file"})
    assert isinstance(error, CallError) and error.tool == "rm_rf"
    assert "Available tools: attempt_completion." in error.message


def test_empty_arguments_are_an_empty_object() -> None:
    call = native_call("c", "attempt_completion", "", TOOLS)
    assert isinstance(call, CallError) and "Missing required parameter 'result'" in call.message
