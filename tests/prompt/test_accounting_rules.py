"""The request meter's rules one by one: every catalogue section counts as the tools' part and no
other does, tokens round up at four characters, each wire shape of a native tool, a native list
adds to the catalogue, and each part of a request stays its own."""

from __future__ import annotations

import dataclasses
import json

import pytest

from runner.llm import Message
from runner.prompt import RequestMeter, RequestTokens, Section, render_sections, tool_json
from runner.prompt.accounting import CATALOGUE_TITLES, section_text, tokens_of
from runner.toolcall import ToolSpec

TOOL = ToolSpec("probe", "Probe café things.", {"type": "object", "properties": {}}, server="s")


@pytest.mark.parametrize(
    ("chars", "tokens"), [(0, 0), (1, 1), (3, 1), (4, 1), (5, 2), (8, 2), (9, 3)]
)
def test_tokens_are_four_characters_each_rounded_up(chars: int, tokens: int) -> None:
    assert tokens_of(chars) == tokens


def test_the_catalogue_is_exactly_these_four_sections() -> None:
    assert {"MCP SERVERS", "TOOL USE", "TOOLS", "DEFERRED TOOLS"} == CATALOGUE_TITLES


@pytest.mark.parametrize("title", ["MCP SERVERS", "TOOL USE", "TOOLS", "DEFERRED TOOLS"])
def test_every_catalogue_section_is_counted_as_the_tools_part(title: str) -> None:
    sections = [Section("ROLE", "r" * 38), Section(title, "t" * 400)]
    system = render_sections(sections)
    tokens = RequestMeter(system, sections).measure([])
    assert tokens.tools == tokens_of(len(section_text(sections[1])))
    assert tokens.system == tokens_of(len(system) - len(section_text(sections[1])))
    assert tokens.tools > tokens.system


@pytest.mark.parametrize("title", ["ROLE", "RULES", "TOOLS USE", "tools", "DEFERRED"])
def test_any_other_section_stays_in_the_system_part(title: str) -> None:
    sections = [Section(title, "x" * 400)]
    system = render_sections(sections)
    tokens = RequestMeter(system, sections).measure([])
    assert tokens.tools == 0
    assert tokens.system == tokens_of(len(system))


def test_a_section_is_measured_with_its_heading_and_the_blank_line_after_it() -> None:
    assert section_text(Section("T", "body  \n")) == "# T\n\nbody\n\n"


def test_a_catalogue_longer_than_the_system_prompt_is_capped_at_it() -> None:
    meter = RequestMeter("short", [Section("TOOLS", "t" * 100)])
    tokens = meter.measure([])
    assert (tokens.system, tokens.tools) == (0, tokens_of(len("short")))


def test_a_native_tool_list_adds_to_the_catalogue_sections() -> None:
    sections = [Section("ROLE", "r" * 40), Section("TOOLS", "t" * 40)]
    system = render_sections(sections)
    meter = RequestMeter(system, sections)
    alone = meter.measure([]).tools
    both = meter.measure([], [TOOL]).tools
    catalogue = len(section_text(sections[1]))
    assert alone == tokens_of(catalogue)
    assert both == tokens_of(catalogue + len(tool_json(TOOL)))


def test_every_native_tool_is_counted_in_the_meters_provider_shape() -> None:
    other = ToolSpec("other", "Other.", {"type": "object"}, server="s")
    for provider in ("anthropic", "openai"):
        meter = RequestMeter("system", [], provider)
        expected = len(tool_json(TOOL, provider)) + len(tool_json(other, provider))
        assert meter.measure([], [TOOL, other]).tools == tokens_of(expected)


def test_the_wire_shapes_of_a_tool_are_exact_and_keep_its_characters() -> None:
    schema = {"type": "object", "properties": {}}
    assert json.loads(tool_json(TOOL)) == {
        "name": "probe",
        "description": "Probe café things.",
        "input_schema": schema,
    }
    assert json.loads(tool_json(TOOL, "openai")) == {
        "type": "function",
        "function": {"name": "probe", "description": "Probe café things.", "parameters": schema},
    }
    assert "café" in tool_json(TOOL) and "café" in tool_json(TOOL, "openai")


def test_a_tool_without_a_schema_is_offered_an_empty_object_schema() -> None:
    bare = ToolSpec("bare", "Bare.", {}, server="s")
    assert json.loads(tool_json(bare))["input_schema"] == {"type": "object"}
    assert json.loads(tool_json(bare, "openai"))["function"]["parameters"] == {"type": "object"}


def test_every_message_counts_each_rounded_up() -> None:
    meter = RequestMeter("", [])
    used = meter.measure([Message("user", "x" * 5), Message("assistant", "y"), Message("user", "")])
    assert used.messages == 2 + 1 + 0
    assert used.system == 0 and used.tools == 0


def test_each_part_of_the_request_tokens_is_its_own() -> None:
    tokens = RequestTokens(1, 20, 300)
    assert tokens.total == 321
    assert tokens.as_json() == {"system_tokens": 1, "tools_tokens": 20, "messages_tokens": 300}
    assert (RequestTokens(1, 20, 300) + RequestTokens(4000, 50000, 600000)).as_json() == {
        "system_tokens": 4001,
        "tools_tokens": 50020,
        "messages_tokens": 600300,
    }
    assert RequestTokens().as_json() == {
        "system_tokens": 0,
        "tools_tokens": 0,
        "messages_tokens": 0,
    }
    assert RequestTokens().total == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        tokens.system = 2  # type: ignore[misc]
