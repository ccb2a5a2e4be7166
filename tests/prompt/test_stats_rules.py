"""`prompt --stats`, rule by rule: every row is measured as the request carries it (the task
message, each section, each tool in xml and in each native wire shape), shares are over the total
to four places, deferred tools are listed by name only, and the table shows every row."""

from __future__ import annotations

import pytest

from runner.prompt import Section, tool_json
from runner.prompt.accounting import section_text, tokens_of
from runner.prompt.catalogue import tool_entry
from runner.prompt.stats import prompt_stats, stats_text
from runner.toolcall import ToolSpec

SECTIONS = [Section("ROLE", "r" * 40), Section("TOOLS", "t" * 20)]


def _tool(name: str, description: str = "Probe.") -> ToolSpec:
    return ToolSpec(name, description, {"type": "object"}, server="s")


@pytest.mark.parametrize("prompt", ["", "x", "x" * 4, "x" * 5, "Do it now, please, and well." * 3])
def test_the_task_message_is_measured_from_the_task_prompt(prompt: str) -> None:
    found = prompt_stats(SECTIONS, [], prompt)
    assert found["messages"][0]["tokens"] == tokens_of(len(prompt))
    assert found["parts"]["messages_tokens"] == tokens_of(len(prompt))


def test_every_section_row_is_its_heading_and_text() -> None:
    found = prompt_stats(SECTIONS, [], "p")
    assert found["sections"] == [
        {
            "title": s.title,
            "tokens": tokens_of(len(section_text(s))),
            "share": pytest.approx(
                round(tokens_of(len(section_text(s))) / found["total_tokens"], 4), abs=0
            ),
        }
        for s in SECTIONS
    ]
    assert found["parts"]["tools_tokens"] == tokens_of(len(section_text(SECTIONS[1])))


def test_shares_are_over_the_total_rounded_to_four_places() -> None:
    found = prompt_stats([Section("ROLE", "r" * 8)], [], "x" * 7)
    assert found["total_tokens"] == 5 + 2  # "# ROLE\n\n", the text and a newline; the message
    (section,) = found["sections"]
    assert section["tokens"] == 5 and section["share"] == 0.7143
    (message,) = found["messages"]
    assert message["tokens"] == 2 and message["share"] == 0.2857


def test_a_request_of_a_single_token_shares_it_whole() -> None:
    found = prompt_stats([Section("", "")], [], "")
    assert found["total_tokens"] == 1
    assert found["sections"][0]["share"] == 1.0


def test_every_xml_tool_row_is_its_catalogue_entry_and_the_blank_line_after_it() -> None:
    tools = [_tool(f"t{i}", "d" * i) for i in range(1, 5)]  # every remainder of four
    found = prompt_stats(SECTIONS, tools, "p")
    offered = {t.name for t in tools}
    assert found["mode"] == "xml"
    assert found["tools"] == [
        {
            "name": t.name,
            "tokens": tokens_of(len(tool_entry(t, offered)) + 2),
            "share": round(tokens_of(len(tool_entry(t, offered)) + 2) / found["total_tokens"], 4),
        }
        for t in tools
    ]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_every_native_tool_row_is_measured_in_the_providers_wire_shape(provider: str) -> None:
    tools = [_tool("alpha", "a" * 30), _tool("beta", "b" * 7)]
    found = prompt_stats(SECTIONS, [], "p", tools, (), provider)
    assert found["mode"] == "native"
    rows = {row["name"]: row["tokens"] for row in found["tools"]}
    assert rows == {t.name: tokens_of(len(tool_json(t, provider))) for t in tools}
    catalogue = len(section_text(SECTIONS[1]))
    wire = sum(len(tool_json(t, provider)) for t in tools)
    assert found["parts"]["tools_tokens"] == tokens_of(catalogue + wire)


def test_deferred_tools_are_listed_by_name_only_and_left_out_of_the_xml_rows() -> None:
    tools = [_tool("shown"), _tool("zeta"), _tool("alpha")]
    hidden = (name for name in ["zeta", "alpha"])  # any iterable, read once
    found = prompt_stats(SECTIONS, tools, "p", hidden=hidden)
    assert [row["name"] for row in found["tools"]] == ["shown"]
    assert found["deferred_tools"] == ["alpha", "zeta"]


def test_the_table_shows_every_part_row_and_tool() -> None:
    stats = {
        "mode": "native",
        "total_tokens": 12345,
        "parts": {"system_tokens": 1000, "tools_tokens": 2345, "messages_tokens": 9000},
        "sections": [
            {"title": "ROLE", "tokens": 1000, "share": 0.081},
            {"title": "TOOLS", "tokens": 2345, "share": 0.19},
        ],
        "messages": [{"role": "user", "tokens": 9000, "share": 0.729}],
        "tools": [{"name": "probe", "tokens": 2345, "share": 0.19}],
        "deferred_tools": ["a", "b"],
    }
    assert stats_text(stats) == (
        "First request (native mode): about 12,345 tokens (estimated, about 4 characters a token)\n"
        "\n"
        "  system                         1,000\n"
        "  tools                          2,345\n"
        "  messages                       9,000\n"
        "\n"
        "By section:\n"
        "  ROLE                           1,000    8.1%\n"
        "  TOOLS                          2,345   19.0%\n"
        "  (task message)                 9,000   72.9%\n"
        "\n"
        "By tool:\n"
        "  probe                          2,345   19.0%\n"
        "\n"
        "Deferred behind find_tools: 2 tools\n"
    )
    stats["deferred_tools"] = []
    assert stats_text(stats).endswith("By tool:\n  probe                          2,345   19.0%\n")
