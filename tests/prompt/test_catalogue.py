from __future__ import annotations

from runner.prompt.catalogue import catalogue_sections, describe_type, example_value
from runner.toolcall.spec import ToolSpec

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File path to read"},
        "count": {"type": "integer", "minimum": 3},
        "ratio": {"type": "number"},
        "force": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object", "properties": {"k": {"type": "string"}}},
        "mode": {"enum": ["fast", "slow"]},
        "note": {"type": ["string", "null"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "ref": {"$ref": "#/$defs/Level"},
    },
    "required": ["path", "count", "ratio", "force", "tags", "meta", "mode", "ref"],
    "$defs": {"Level": {"type": "string", "enum": ["low", "high"]}},
}
TOOL = ToolSpec("probe", "Probe things.", SCHEMA, server="test")


def sections():
    return {s.title: s.text for s in catalogue_sections({"test": [TOOL]}, [TOOL])}


def test_types_are_described_from_the_schema():
    props = SCHEMA["properties"]
    assert describe_type(props["tags"], SCHEMA) == "array of string"
    assert describe_type(props["mode"], SCHEMA) == "one of: fast, slow"
    assert describe_type(props["note"], SCHEMA) == "string or null"
    assert describe_type(props["either"], SCHEMA) == "integer or null"
    assert describe_type(props["ref"], SCHEMA) == "one of: low, high"


def test_examples_are_built_from_the_schema():
    props = SCHEMA["properties"]
    assert example_value(props["count"], SCHEMA) == 3
    assert example_value(props["path"], SCHEMA) == "src/main.py"
    assert example_value(props["meta"], SCHEMA) == {"k": "text"}
    assert example_value(props["either"], SCHEMA) == 1


def test_tools_section_shows_every_parameter_and_an_example_of_the_required_ones():
    # The Usage block of the first release (every parameter as `NAME here`) repeated the
    # Parameters list; the Example shows the call's form with real values (docs/prompt.md).
    text = sections()["TOOLS"]
    assert "## probe" in text
    assert "- path (required, string): File path to read" in text
    assert "- note (optional, string or null)" in text
    assert "- either (optional, integer or null)" in text
    assert "Example:\n<probe>\n<path>src/main.py</path>\n<count>3</count>" in text
    assert '<tags>["text"]</tags>' in text
    example = text.split("Example:", 1)[1]
    assert "<note>" not in example and "<either>" not in example
    assert "Usage:" not in text and "here</" not in text


def test_attempt_completion_is_always_in_the_catalogue():
    text = sections()["TOOLS"]
    assert "## attempt_completion" in text
    assert "- result (required, string)" in text


def test_tool_use_explains_the_format_several_calls_and_completion():
    text = sections()["TOOL USE"]
    assert "<read_file>" in text
    assert "several tool calls in one message" in text
    assert "attempt_completion" in text


def test_no_servers_says_only_attempt_completion_is_available():
    text = {s.title: s.text for s in catalogue_sections({}, [])}["MCP SERVERS"]
    assert "only tool is attempt_completion" in text
