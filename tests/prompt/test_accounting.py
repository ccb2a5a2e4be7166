"""What a request carries, by part (DESIGN 28): the meter's split of the system prompt, native tool
lists in each wire's shape, the stats of `prompt --stats`, and the lean wire schema."""

from __future__ import annotations

import json

from runner.llm import Message
from runner.prompt import RequestMeter, RequestTokens, Section, render_sections, tool_json
from runner.prompt.stats import prompt_stats, stats_text
from runner.toolcall import ATTEMPT_COMPLETION, ToolSpec, lean_schema

SECTIONS = [
    Section("ROLE", "r" * 400),
    Section("TOOL USE", "u" * 200),
    Section("TOOLS", "t" * 800),
]
TOOL = ToolSpec(
    "probe",
    "Probe things.",
    {
        "type": "object",
        "title": "probeArguments",
        "properties": {
            "title": {"type": "string", "title": "Title", "description": "A field named title."},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
        "required": ["title"],
    },
    server="s",
)


def test_the_meter_splits_the_catalogue_from_the_rest_of_the_system_prompt() -> None:
    system = render_sections(SECTIONS)
    meter = RequestMeter(system, SECTIONS)
    used = meter.measure([Message("user", "x" * 40), Message("assistant", "y" * 41)])
    assert used.system == 400 // 4 + 3  # "# ROLE\n\n" and the text
    assert used.tools == -(-(len(system) - meter.system_chars) // 4)
    assert used.messages == 10 + 11
    assert used.total == used.system + used.tools + used.messages


def test_native_tools_are_measured_in_the_wire_shape_of_the_provider() -> None:
    meter = RequestMeter("system", [])
    plain = meter.measure([], [TOOL, ATTEMPT_COMPLETION]).tools
    openai = RequestMeter("system", [], "openai").measure([], [TOOL, ATTEMPT_COMPLETION]).tools
    assert openai > plain
    wrapped = json.loads(tool_json(TOOL, "openai"))
    assert wrapped["type"] == "function" and wrapped["function"]["name"] == "probe"
    assert set(json.loads(tool_json(TOOL))) == {"name", "description", "input_schema"}


def test_request_tokens_add_up_and_read_as_the_log_writes_them() -> None:
    total = RequestTokens(1, 2, 3) + RequestTokens(10, 20, 30)
    assert total.as_json() == {"system_tokens": 11, "tools_tokens": 22, "messages_tokens": 33}


def test_the_lean_schema_drops_generated_titles_and_null_defaults_but_no_property() -> None:
    lean = lean_schema(TOOL.input_schema)
    assert "title" not in lean
    assert lean["properties"]["title"] == {"type": "string", "description": "A field named title."}
    assert lean["properties"]["n"] == {"type": ["integer", "null"]}
    assert lean["required"] == ["title"]
    assert TOOL.input_schema["title"] == "probeArguments"  # the spec itself is left whole
    kept = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "default": "x"}
    assert lean_schema(kept) == kept  # not a plain type: kept as it is


def test_stats_rows_sum_to_the_total_with_shares() -> None:
    found = prompt_stats(SECTIONS, [TOOL], "Do the task.")
    assert found["mode"] == "xml" and found["deferred_tools"] == []
    parts = found["parts"]
    assert sum(parts.values()) == found["total_tokens"]
    assert found["messages"][0]["tokens"] == parts["messages_tokens"] == 3
    assert [row["title"] for row in found["sections"]] == ["ROLE", "TOOL USE", "TOOLS"]
    assert all(0 < row["share"] < 1 for row in found["sections"])
    native = prompt_stats(SECTIONS, [TOOL], "Do.", [TOOL, ATTEMPT_COMPLETION], ["x"], "openai")
    assert native["mode"] == "native" and native["deferred_tools"] == ["x"]
    assert [row["name"] for row in native["tools"]] == ["probe", "attempt_completion"]
    text = stats_text(native)
    assert "By section:" in text and "By tool:" in text and "Deferred behind find_tools: 1" in text
