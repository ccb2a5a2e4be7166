"""The deferred catalogue's rules one by one: the defaults and each threshold at its bound, who is
never deferred, the one-line summary's bound, the shelf's loading, and how find_tools scores."""

from __future__ import annotations

import dataclasses

import pytest

from runner.prompt import FIND_TOOLS, ToolSearch, ToolShelf, defer, find_tools_spec, tool_json
from runner.prompt.accounting import tokens_of
from runner.prompt.deferred import one_line
from runner.toolcall import ToolSpec

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}


def _tools(count: int, about: str = "Does a thing.", server: str = "forge") -> list[ToolSpec]:
    return [ToolSpec(f"tool_{i}", about, SCHEMA, server=server) for i in range(count)]


def _size(tools: list[ToolSpec]) -> int:
    return sum(tokens_of(len(tool_json(t))) for t in tools)


def test_the_defaults_are_auto_past_thirty_tools_or_a_tenth_of_the_window() -> None:
    search = ToolSearch()
    assert (search.mode, search.max_tools, search.window_share) == ("auto", 30, 0.1)
    assert defer(_tools(30), search, None) == []
    assert len(defer(_tools(31), search, None)) == 31
    few = _tools(3)
    size = _size(few)
    assert defer(few, search, size * 10) == []
    assert defer(few, search, size * 10 - 1) == few


def test_auto_defers_only_past_the_window_share_not_at_it() -> None:
    few = _tools(4, about="A description of some length. " * 20)
    size = _size(few)
    search = ToolSearch(window_share=0.5)
    assert defer(few, search, 2 * size) == []
    assert defer(few, search, 2 * size - 1) == few
    assert defer(few, ToolSearch(window_share=0.5, max_tools=3), 10 * size) == few


def test_a_tool_search_is_an_immutable_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ToolSearch().mode = "never"  # type: ignore[misc]


@pytest.mark.parametrize("mode", ["auto", "always", "never"])
def test_no_mode_defers_the_workspace_or_the_runners_own_tools(mode: str) -> None:
    spared = [
        ToolSpec("read_file", "Read.", SCHEMA, server="workspace"),
        ToolSpec("sub_agent", "Start one.", SCHEMA),
        *_tools(0),
    ]
    assert defer(spared * 40, ToolSearch(mode=mode, max_tools=0), 1) == []  # type: ignore[arg-type]


def test_find_tools_takes_one_required_query() -> None:
    spec = find_tools_spec()
    assert spec.name == FIND_TOOLS == "find_tools"
    assert spec.description.startswith("Load the full definitions of tools listed under DEFERRED")
    assert spec.input_schema["required"] == ["query"]
    assert spec.input_schema["properties"]["query"]["type"] == "string"
    assert spec.server == ""  # the runner's own: never deferred itself


def test_a_summary_of_exactly_sixty_characters_is_kept_and_one_longer_is_cut_to_sixty() -> None:
    exact = "a" * 60
    assert one_line(ToolSpec("t", exact + ". Then more.")) == exact
    cut = one_line(ToolSpec("t", "b" * 61))
    assert cut == "b" * 59 + "…"
    assert one_line(ToolSpec("t", "word " * 30), limit=10) == "word word…"


@pytest.mark.parametrize(
    ("description", "summary"),
    [
        ("Does a thing. More words.", "Does a thing"),
        ("Is it? Yes it is.", "Is it?"),
        ("Stop! Now.", "Stop!"),
        ("Version 1.2 of the tool. Second.", "Version 1.2 of the tool"),
        ("  First line\nsecond line. Third.", "First line"),
        ("No full stop at all", "No full stop at all"),
    ],
)
def test_the_summary_is_the_first_sentence_of_the_first_line(
    description: str, summary: str
) -> None:
    assert one_line(ToolSpec("t", description)) == summary


def test_an_empty_shelf_is_falsy_and_one_with_a_tool_is_not() -> None:
    assert not ToolShelf()
    assert ToolShelf().loaded == [] and ToolShelf().deferred == {}
    assert not ToolShelf.of([])
    assert ToolShelf.of(_tools(1))


def test_only_a_deferred_name_loads_and_each_once_in_load_order() -> None:
    shelf = ToolShelf.of(_tools(3))
    shelf.load(["read_file", "tool_2", "tool_0", "tool_2"])
    assert shelf.loaded == ["tool_2", "tool_0"]
    assert [t.name for t in shelf.loaded_specs()] == ["tool_2", "tool_0"]
    assert shelf.hidden("tool_1") and not shelf.hidden("tool_2") and not shelf.hidden("read_file")


def test_a_search_by_words_loads_at_most_five_in_catalogue_order() -> None:
    shelf = ToolShelf.of(_tools(7, about="Does a thing."))
    assert [t.name for t in shelf.search("thing")] == [f"tool_{i}" for i in range(5)]


def test_a_word_of_a_name_counts_two_of_the_description_and_ties_all_load() -> None:
    shelf = ToolShelf.of(
        [
            ToolSpec("label_maker", "Makes labels for an issue and a note.", SCHEMA, server="f"),
            ToolSpec("notes", "Writes notes.", SCHEMA, server="f"),
            ToolSpec("issue_view", "Shows one.", SCHEMA, server="f"),
            ToolSpec("other", "Something else.", SCHEMA, server="f"),
        ]
    )
    # "issue" in a name (2) ties "issue" and "note" in a description (1 + 1): both load
    assert [t.name for t in shelf.search("issue note")] == ["label_maker", "issue_view"]
    # one description word (1) loses to one name word (2)
    assert [t.name for t in shelf.search("issue")] == ["issue_view"]
    # the best score wins even when a lower one comes first in the catalogue
    assert [t.name for t in shelf.search("notes labels")] == ["notes"]
    assert shelf.search("") == [] and shelf.search("zzz") == []


def test_exact_names_load_each_named_once_however_separated() -> None:
    shelf = ToolShelf.of(_tools(4))
    found = shelf.search(" TOOL_3,tool_1  tool_3\ttool_9 ")
    assert [t.name for t in found] == ["tool_3", "tool_1"]


def test_the_listing_explains_find_tools_then_lists_every_tool() -> None:
    shelf = ToolShelf.of(_tools(2, about="Does a thing. More."))
    assert shelf.listing() == (
        "These tools are not described here: call find_tools with their names (or words of what"
        " you need) to load their definitions, then call them.\n"
        "\n"
        "tool_0: Does a thing\n"
        "tool_1: Does a thing"
    )
