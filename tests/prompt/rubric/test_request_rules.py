"""The grader's request, rule by rule: every piece's exact bound (kept whole at it, cut by one
past it, head or tail), every piece in its own block, the criteria as written, the closing
instruction and the retry's words."""

from __future__ import annotations

import dataclasses
import re

import pytest

from runner.prompt.rubric import grader_request, quote, verdict_retry


def _blocks(text: str) -> dict[str, str]:
    return dict(re.findall(r'<data name="([a-z_]+)">\n(.*?)\n</data>', text, re.DOTALL))


_PIECES = {"prompt": "task", "result": "result", "change": "change", "check_output": "check_output"}
_LIMITS = {"prompt": 20_000, "result": 40_000, "change": 60_000, "check_output": 4_000}


@pytest.mark.parametrize("field", sorted(_PIECES))
def test_every_piece_at_its_limit_is_quoted_whole(field: str) -> None:
    pieces = {"prompt": "p", "result": "r", "change": "c", "check_output": "o"}
    pieces[field] = "x" * _LIMITS[field]
    body = _blocks(grader_request(["x"], **pieces).user)[_PIECES[field]]
    assert body == "x" * _LIMITS[field]


@pytest.mark.parametrize("field", sorted(_PIECES))
def test_every_piece_one_past_its_limit_loses_one_character_said_so(field: str) -> None:
    pieces = {"prompt": "p", "result": "r", "change": "c", "check_output": "o"}
    limit = _LIMITS[field]
    pieces[field] = "a" + "x" * (limit - 1) + "z"
    body = _blocks(grader_request(["x"], **pieces).user)[_PIECES[field]]
    note = "[... 1 characters left out ...]"
    if field == "check_output":  # the end of a check's output, as the agent sees a failed one
        assert body == note + "\n" + "x" * (limit - 1) + "z"
    else:
        assert body == "a" + "x" * (limit - 1) + "\n" + note


def test_quote_keeps_exactly_the_tail_when_asked() -> None:
    assert quote("n", "abcdef", 4, keep="tail") == (
        '<data name="n">\n[... 2 characters left out ...]\ncdef\n</data>'
    )
    assert (
        quote("n", "abcdef", 4) == '<data name="n">\nabcd\n[... 2 characters left out ...]\n</data>'
    )
    assert quote("n", "abcd", 4, keep="tail") == '<data name="n">\nabcd\n</data>'


def test_each_piece_lands_in_its_own_block() -> None:
    request = grader_request(
        ["x"], prompt="THE PROMPT", result="THE RESULT", change="THE CHANGE", check_output="THE OUT"
    )
    assert _blocks(request.user) == {
        "task": "THE PROMPT",
        "result": "THE RESULT",
        "change": "THE CHANGE",
        "check_output": "THE OUT",
    }


@pytest.mark.parametrize(
    ("change", "check_output", "names"),
    [
        ("d", None, ["task", "result", "change"]),
        (None, "o", ["task", "result", "check_output"]),
        (None, None, ["task", "result"]),
        ("", "", ["task", "result", "change", "check_output"]),
    ],
)
def test_a_block_is_there_exactly_when_its_piece_is_given(
    change: str | None, check_output: str | None, names: list[str]
) -> None:
    request = grader_request(
        ["x"], prompt="p", result="r", change=change, check_output=check_output
    )
    assert list(_blocks(request.user)) == names


def test_the_criteria_keep_their_characters_and_the_request_ends_with_the_count() -> None:
    request = grader_request(
        ["Says café", "Names ∑", "third"], prompt="p", result="r", change=None, check_output=None
    )
    assert '1. "Says café"\n2. "Names ∑"\n3. "third"' in request.user
    assert "Criteria (3):\n1." in request.user
    assert request.user.endswith(
        "Answer with the JSON object only: 3 entries, one per criterion, in order."
    )


def test_a_request_is_an_immutable_value() -> None:
    request = grader_request(["x"], prompt="p", result="r", change=None, check_output=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.user = "other"  # type: ignore[misc]
    assert request.system.startswith("You are a strict grader")


def test_the_retry_names_the_problem_and_the_number_of_entries() -> None:
    text = verdict_retry("criterion 2 is graded twice", 4)
    assert text.startswith("That answer is not a valid verdict: criterion 2 is graded twice.")
    assert "with exactly 4 entries, one per criterion" in text
    assert '{"criteria": [{"criterion": 1, "pass": true, "reason": "..."}, ...]}' in text
