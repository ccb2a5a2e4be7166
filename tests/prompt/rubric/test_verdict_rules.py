"""The verdict's rules one by one: every shape refused, every message naming the entry and the
criteria count, the reason's exact bound, a tie, and the share compared in whole numbers."""

from __future__ import annotations

import dataclasses
import json

import pytest

from runner.prompt.rubric import (
    CriterionVote,
    VerdictError,
    parse_verdict,
    rubric_passes,
    tally,
)


def _entry(n: object, p: object = True, r: object = "ok") -> dict[str, object]:
    return {"criterion": n, "pass": p, "reason": r}


def _text(*entries: dict[str, object]) -> str:
    return json.dumps({"criteria": list(entries)})


@pytest.mark.parametrize(
    "top", ['["criteria"]', '"criteria"', "null", "3", '{"criteria": [], "x": 1}']
)
def test_anything_but_an_object_whose_only_key_is_criteria_is_refused(top: str) -> None:
    with pytest.raises(VerdictError, match='only key is "criteria"'):
        parse_verdict(top, 1)


@pytest.mark.parametrize("number", ["1", 1.0, 0, -1, 4, True, False, None, [1]])
def test_a_criterion_that_is_not_a_whole_number_in_range_is_refused_naming_the_entry_and_range(
    number: object,
) -> None:
    text = _text(_entry(1), _entry(number), _entry(3))
    with pytest.raises(VerdictError, match='entry 2: "criterion" must be a number from 1 to 3'):
        parse_verdict(text, 3)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (["criterion", 2], 'entry 2 must have exactly the keys "criterion", "pass", "reason"'),
        (["criterion", "pass", "reason"], "entry 2 must have exactly the keys"),
        ({"criterion": 2, "pass": True}, "entry 2 must have exactly the keys"),
        ({"criterion": 2, "reason": "r"}, "entry 2 must have exactly the keys"),
        ({"pass": True, "reason": "r"}, "entry 2 must have exactly the keys"),
        (_entry(2, p="yes"), 'entry 2: "pass" must be true or false'),
        (_entry(2, p=None), 'entry 2: "pass" must be true or false'),
        (_entry(2, r="  \n "), 'entry 2: "reason" must be a non-empty string'),
        (_entry(2, r=5), 'entry 2: "reason" must be a non-empty string'),
        (_entry(2, r=["a"]), 'entry 2: "reason" must be a non-empty string'),
    ],
)
def test_every_malformed_entry_is_refused_naming_its_position(bad: object, problem: str) -> None:
    text = json.dumps({"criteria": [_entry(1), bad, _entry(3)]})
    with pytest.raises(VerdictError, match=problem):
        parse_verdict(text, 3)


def test_every_criterion_left_out_is_named_the_first_too() -> None:
    with pytest.raises(VerdictError, match=r"^criteria 1, 3 are not graded$"):
        parse_verdict(_text(_entry(2)), 3)
    with pytest.raises(VerdictError, match=r"^criteria 1 are not graded$"):
        parse_verdict(_text(), 1)


def test_a_criterion_graded_twice_is_named() -> None:
    with pytest.raises(VerdictError, match="criterion 2 is graded twice"):
        parse_verdict(_text(_entry(2), _entry(1), _entry(2, False)), 2)


def test_every_vote_keeps_its_own_pass_and_reason_in_criterion_order() -> None:
    text = _text(_entry(3, False, "c"), _entry(1, True, "a"), _entry(2, False, "b"))
    assert parse_verdict(text, 3) == [
        CriterionVote(True, "a"),
        CriterionVote(False, "b"),
        CriterionVote(False, "c"),
    ]


def test_a_reason_of_exactly_the_limit_is_kept_whole_and_one_longer_is_cut_to_it() -> None:
    exact = "x" * 1000
    (kept,) = parse_verdict(_text(_entry(1, r=exact)), 1)
    assert kept.reason == exact
    (cut,) = parse_verdict(_text(_entry(1, r="y" * 1001)), 1)
    assert cut.reason == "y" * 999 + "…"


def test_a_fenced_verdict_with_or_without_the_json_tag_is_read() -> None:
    body = _text(_entry(1, False, "no"))
    for text in (f"```json\n{body}\n```", f"  ```\n{body}\n  ```  ", f"\n{body}\n"):
        assert parse_verdict(text, 1) == [CriterionVote(False, "no")]


def test_a_tie_fails_the_criterion_and_a_strict_majority_passes_it() -> None:
    yes, no = CriterionVote(True, "y"), CriterionVote(False, "n")
    assert [t.passed for t in tally(["c"], [[yes], [no]])] == [False]
    assert [t.passed for t in tally(["c"], [[yes], [no], [yes]])] == [True]
    assert [t.passed for t in tally(["c"], [[yes], [no], [no], [yes]])] == [False]
    assert [t.passed for t in tally(["c"], [[yes]])] == [True]
    assert [t.passed for t in tally(["c"], [[no]])] == [False]


def test_a_tally_names_its_criterion_and_keeps_votes_and_reasons_apart() -> None:
    (only,) = tally(
        ["the criterion"], [[CriterionVote(True, "good")], [CriterionVote(False, "bad")]]
    )
    assert only.criterion == "the criterion"
    assert only.votes == (True, False)
    assert only.reasons == ("good", "bad")


def test_a_share_a_hair_above_the_passed_one_is_not_met() -> None:
    tallies = tally(["a", "b", "c"], [[CriterionVote(p, "r") for p in (True, True, False)]])
    assert rubric_passes(tallies, 0.666667) is False
    assert rubric_passes(tallies, 0.6666667) is False
    assert rubric_passes(tallies, 0.666666) is True
    assert rubric_passes(tallies, "all") is False


@pytest.mark.parametrize("share", [0.6666666, 0.66666666, 2 / 3, 0.6])
def test_a_share_written_with_more_places_is_never_rounded_up_past_what_was_passed(
    share: float,
) -> None:
    tallies = tally(["a", "b", "c"], [[CriterionVote(p, "r") for p in (True, True, False)]])
    assert rubric_passes(tallies, share) is True  # 2 of 3 is at least each of these shares


@pytest.mark.parametrize(("passed", "of", "share"), [(3, 5, 0.6), (1, 10, 0.1), (7, 10, 0.7)])
def test_a_share_met_exactly_passes_whatever_the_float_rounding(
    passed: int, of: int, share: float
) -> None:
    votes = [[CriterionVote(i < passed, "r") for i in range(of)]]
    assert rubric_passes(tally([f"c{i}" for i in range(of)], votes), share) is True
    fewer = [[CriterionVote(i < passed - 1, "r") for i in range(of)]]
    assert rubric_passes(tally([f"c{i}" for i in range(of)], fewer), share) is False


def test_votes_and_tallies_are_immutable_values() -> None:
    vote = CriterionVote(True, "r")
    (tallied,) = tally(["c"], [[vote]])
    with pytest.raises(dataclasses.FrozenInstanceError):
        vote.passed = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        tallied.passed = False  # type: ignore[misc]
    assert len({vote, CriterionVote(True, "r")}) == 1
