"""Scanning rules no other test pinned (issue 21): the value-end search cache, closing tags that
do not match, values that hold their own closing tag, tab and CRLF layouts, the fuzzy cutoff."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from runner.toolcall import scan
from runner.toolcall.reply import parse_reply
from runner.toolcall.scan import find_calls, strip_one_newline
from tests.toolcall.test_parse import TOOLS, only_call, only_error

PARAMS = {name: list(spec.input_schema.get("properties", {})) for name, spec in TOOLS.items()}


def test_a_reply_of_many_calls_is_scanned_for_each_value_end_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 5,000-call test checks the result; this counts the strict scans themselves."""
    scans: list[tuple[str, bool]] = []
    real_scan = scan._ValueEnds._scan

    def counted(self: Any, start: int, param: str, params: Any, close: str, strict: bool) -> int:
        scans.append((param, strict))
        return int(real_scan(self, start, param, params, close, strict))

    monkeypatch.setattr(scan._ValueEnds, "_scan", counted)
    text = "\n".join(
        f"<read_file>\n<path>f{i}</path>\n<bogus>1</bogus>\n</read_file>" for i in range(200)
    )
    reply = parse_reply(text, TOOLS)
    assert len(reply.errors) == 200
    # The one strict search for `</path>` finds none followed by a known tag anywhere in the
    # reply: remembered, it answers every later call without reading the rest again. The other
    # searches end inside their own call (`</bogus>` before `</read_file>`, the lenient `</path>`).
    assert scans.count(("path", True)) == 1
    assert scans.count(("path", False)) == 200
    assert scans.count(("bogus", True)) == 200
    assert len(scans) == 401


def test_a_remembered_search_is_reused_only_from_a_later_start() -> None:
    text = "<read_file>\n<path>a</path>\n</read_file>\n<read_file>\n<path>b</path>\n</read_file>"
    ends = scan._ValueEnds(text)
    first = ends.find(text.index("<path>") + 6, "path", ["path"], "</read_file>")
    second_start = text.index("<path>b") + 6
    second = ends.find(second_start, "path", ["path"], "</read_file>")
    assert (text[first : first + 7], text[second : second + 7]) == ("</path>", "</path>")
    assert second > second_start > first
    # Searching again from the first start gives the first end, not the remembered later one.
    assert ends.find(text.index("<path>") + 6, "path", ["path"], "</read_file>") == first


def test_a_tool_tag_followed_by_a_mismatched_closing_tag_is_prose() -> None:
    text = "Wrap it as <read_file></path> and so on; <read_file></read_file> is empty."
    assert [c.tool for c in find_calls(text, PARAMS)] == ["read_file"]
    reply = parse_reply("Type <read_file></path> here.", TOOLS)
    assert reply.items == []


def test_an_empty_call_is_a_call_missing_its_parameters() -> None:
    error = only_error("<read_file></read_file>")
    assert "Missing required parameter <path>" in error.message


def test_a_repeated_opening_tag_starts_the_call_at_the_second() -> None:
    text = "<read_file>\n<read_file>\n<path>a</path>\n</read_file>"
    call = only_call(text)
    assert call.arguments == {"path": "a"}
    assert call.raw == "<read_file>\n<path>a</path>\n</read_file>"


def test_a_tool_tag_repeated_inside_a_value_stays_in_the_value() -> None:
    text = "<read_file>\n<path>a</path>\n<read_file>\n<path>b</path>\n</read_file>"
    call = only_call(text)
    assert call.arguments == {"path": "a</path>\n<read_file>\n<path>b"}


def test_a_value_holding_its_closing_tag_then_an_unknown_parameter_ends_at_the_last() -> None:
    text = (
        "<write_to_file>\n<path>a</path>\n<content>x</content> y</content>\n"
        "<bogus>1</bogus>\n</write_to_file>"
    )
    [raw] = find_calls(text, PARAMS)
    assert raw.arguments == {"path": "a", "content": "x</content> y", "bogus": "1"}
    assert raw.problems == []
    error = only_error(text)
    assert "Unknown parameter <bogus>" in error.message
    assert "Text outside" not in error.message and "not closed" not in error.message


def test_a_value_holding_its_closing_tag_before_a_known_parameter() -> None:
    text = "<write_to_file>\n<content>a</content> b</content>\n<path>p</path>\n</write_to_file>"
    assert only_call(text).arguments == {"content": "a</content> b", "path": "p"}


def test_stray_text_and_an_unclosed_parameter_are_reported() -> None:
    [raw] = find_calls("<read_file>\n<path>a</path>\nplease\n</read_file>", PARAMS)
    assert raw.problems == ["Text outside any parameter tag: 'please'."]
    assert raw.arguments == {"path": "a"}
    [raw] = find_calls("<read_file>\n<path>a\n</read_file>", PARAMS)
    assert raw.problems == ["Parameter <path> is not closed: write </path> after its value."]
    [raw] = find_calls("<read_file>\n<path>a</path>\n<path>b</path>\n</read_file>", PARAMS)
    assert raw.problems == ["Parameter <path> is given twice; give it once."]
    assert raw.arguments == {"path": "b"}


def test_a_long_stray_text_is_cut_in_the_problem() -> None:
    [raw] = find_calls(f"<read_file>\n<path>a</path>\n{'w' * 100}\n</read_file>", PARAMS)
    assert raw.problems == [f"Text outside any parameter tag: '{'w' * 60}...'."]


def test_a_call_cut_off_by_the_end_of_the_reply() -> None:
    for text in ("<read_file>\n<path>a</path>\n", "<read_file>\n<path>a", "<read_file>\n<pa"):
        [raw] = find_calls(text, PARAMS)
        assert raw.cut_off and raw.end == len(text) and raw.tool == "read_file"


@pytest.mark.parametrize(
    "text",
    [
        "\t<readfile>\n\t<path>a</path>\n\t</readfile>",
        "<readfile>\r\n<path>a</path>\r\n</readfile>",
        "  \t<readfile> \t\r\n\t <path>a</path>\r\n</readfile>",
        "Some prose.\n\t<readfile>\r\n\t<path>a</path>\r\n\t</readfile>",
    ],
)
def test_tab_indented_and_crlf_layouts_of_an_unknown_tool_are_calls(text: str) -> None:
    [raw] = find_calls(text, PARAMS)
    assert (raw.tool, raw.known) == ("readfile", False)
    assert text[raw.start : raw.end].startswith("<readfile>")
    assert text[raw.start : raw.end].endswith("</readfile>")


@pytest.mark.parametrize(
    "text",
    [
        "Some prose <readfile>\n<path>a</path>\n</readfile>",  # not alone on its line
        "<readfile> <path>a</path>\n</readfile>",  # the next tag on the same line
        "<readfile>\n\n<path>a</path>\n</readfile>",  # a blank line before the next tag
    ],
)
def test_an_unknown_tag_outside_the_call_layout_is_prose(text: str) -> None:
    assert list(find_calls(text, PARAMS)) == []


def test_tab_indented_crlf_values_lose_one_newline_each_side() -> None:
    call = only_call("<read_file>\r\n\t<path>\r\na\r\n\r\n</path>\r\n</read_file>")
    assert call.arguments == {"path": "a\r\n"}
    assert strip_one_newline("\r\n\r\nx\n\n") == "\r\nx\n"
    assert strip_one_newline("\nx\r\n") == "x"
    assert strip_one_newline("x") == "x"


@pytest.mark.parametrize(
    ("name", "is_call"),
    [
        ("readfile", True),  # 0.94 like read_file
        ("rdfile", True),  # exactly 0.8: at the cutoff
        ("readfyle", True),  # 0.82
        ("reedfyle", False),  # 0.71: below the cutoff
        ("section", False),
    ],
)
def test_the_fuzzy_cutoff_for_an_unknown_tool_is_0_8(name: str, is_call: bool) -> None:
    text = f"<{name}>\n<path>a</path>\n</{name}>"
    found = list(find_calls(text, PARAMS))
    assert [(c.tool, c.known) for c in found] == ([(name, False)] if is_call else [])


def test_a_snake_case_name_is_an_attempted_call_whatever_it_resembles() -> None:
    text = "<make_coffee>\n<size>big</size>\n</make_coffee> then more"
    [raw] = find_calls(text, PARAMS)
    text = "<make_coffee>\n<size>big</size>\n</make_coffee> then more"
    assert (raw.tool, raw.known, raw.end) == ("make_coffee", False, text.index(" then"))
    text = "<make_coffee>\n<size>big</size>\n"
    [raw] = find_calls(text, PARAMS)
    assert raw.end == len(text)  # unclosed: to the end of the reply


def test_an_unknown_first_parameter_needs_the_call_layout() -> None:
    assert [c.tool for c in find_calls("<read_file>\n<pth>a</pth>\n</read_file>", PARAMS)] == [
        "read_file"
    ]
    assert list(find_calls("a <read_file><pth>a</pth></read_file>", PARAMS)) == []


def test_a_found_call_is_a_frozen_record() -> None:
    [raw] = find_calls("<read_file>\n<path>a</path>\n</read_file>", PARAMS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        raw.tool = "other"  # type: ignore[misc]


def test_the_tool_tag_opened_again_after_a_parameter_does_not_end_the_call() -> None:
    text = "<read_file>\n<path>a</path>\n<read_file>\n</read_file>"
    [raw] = find_calls(text, PARAMS)
    assert raw.end == len(text) and raw.arguments == {"path": "a"}
    assert raw.problems == [
        "Parameter <read_file> is not closed: write </read_file> after its value."
    ]


def test_a_call_cut_off_in_stray_text_after_a_parameter_is_still_a_cut_off_call() -> None:
    text = "<read_file>\n<path>a</path>\nand then the reply st"
    [raw] = find_calls(text, PARAMS)
    assert (raw.tool, raw.cut_off, raw.end) == ("read_file", True, len(text))


def test_an_unknown_call_at_the_start_of_a_reply_that_ends_in_a_space_is_a_call() -> None:
    # The look back for the line's start stops at offset 0: it must not wrap to the reply's end.
    for text in ("<do_thing>\n<path>a</path>\n</do_thing> ", "<do_thing>\n<path>a</path>\n\t"):
        [raw] = find_calls(text, PARAMS)
        assert (raw.tool, raw.known, raw.start) == ("do_thing", False, 0)


def test_a_stray_text_of_exactly_60_characters_is_shown_whole() -> None:
    [raw] = find_calls(f"<read_file>\n<path>a</path>\n{'w' * 60}\n</read_file>", PARAMS)
    assert raw.problems == [f"Text outside any parameter tag: '{'w' * 60}'."]


def test_stray_text_against_both_tags_is_named_whole_in_the_problem() -> None:
    """No newline around it to spare: the problem quotes its first and last character too."""
    [raw] = find_calls("<read_file>\n<path>a</path>junk</read_file>", PARAMS)
    assert raw.arguments == {"path": "a"}
    assert raw.problems == ["Text outside any parameter tag: 'junk'."]


def test_a_search_remembered_for_one_tool_does_not_answer_another_tools_parameter() -> None:
    """read_file's `</path>` followed by its own tag or close is found nowhere; write_to_file's
    is (before `<content>`): its value keeps the `</path><b>` it holds."""
    text = (
        "<read_file>\n<path>a</path><x>y</x>\n</read_file>\n"
        "<write_to_file>\n<path>x</path><b>bold</path>\n<content>c</content>\n</write_to_file>"
    )
    first, second = find_calls(text, PARAMS)
    assert first.arguments == {"path": "a", "x": "y"}
    assert (second.arguments, second.problems) == ({"path": "x</path><b>bold", "content": "c"}, [])
