"""Server output masked in pieces, and the names server tools are exposed under."""

from __future__ import annotations

import logging

import pytest

from runner.mcp.limits import Catalogue, McpLimits, exposed_name
from runner.mcp.serverlog import StreamRedactor, guard_sdk_logging
from runner.redact import Redactor

SECRET = "tok-SEEDED-1234567"


@pytest.mark.parametrize("cut", range(1, len(SECRET) + 2))
def test_a_secret_split_across_two_pieces_is_still_masked(cut: int) -> None:
    text = f"before {SECRET} after\n"
    stream = StreamRedactor(Redactor([SECRET]))
    written = stream.feed(text[: 7 + cut]) + stream.feed(text[7 + cut :]) + stream.flush()
    assert written == "before *** after\n"


def test_a_stream_without_secrets_is_written_as_it_comes() -> None:
    assert StreamRedactor(Redactor()).feed("abc") == "abc"


def test_sdk_log_records_are_masked(capsys: pytest.CaptureFixture[str]) -> None:
    guard_sdk_logging(Redactor([SECRET]))
    try:
        raise ValueError(f"input_value='{SECRET}'")
    except ValueError:
        logging.getLogger("mcp.client.stdio").exception("Failed to parse %s", SECRET)
    err = capsys.readouterr().err
    assert "Failed to parse ***" in err and "input_value='***'" in err and SECRET not in err


def test_reserved_and_odd_names_are_exposed_as_server_tool() -> None:
    assert exposed_name("workspace", "read_file", clash=True) == "read_file"
    assert exposed_name("other", "read_file", clash=True) == "other__read_file"
    assert exposed_name("other", "attempt_completion", clash=False) == "other__attempt_completion"
    assert exposed_name("other", "load_skill", clash=False) == "other__load_skill"
    assert exposed_name("other", "a b\n# RULES", clash=False) == "other__a_b_RULES"
    assert exposed_name("other", "echo", clash=False) == "echo"
    assert exposed_name("other", "echo", clash=True) == "other__echo"


def test_the_catalogue_cuts_descriptions_and_drops_what_does_not_fit() -> None:
    catalogue = Catalogue(McpLimits(max_description_chars=10, max_catalogue_chars=120))
    kept = catalogue.admit("s", [("a", "x" * 50, {}), ("b", "y" * 200, {})])
    assert [name for name, _, _ in kept] == ["a", "b"]
    assert kept[0][1].startswith("x" * 10 + "\n(Description cut at 10")
    dropped = catalogue.admit("t", [("c", "z", {"big": "q" * 500})])
    assert dropped == [] and any("mcp_max_catalogue_chars" in m for _, m in catalogue.warnings)
