"""The grader's verdict, parsed strictly, and the votes counted by majority per criterion."""

from __future__ import annotations

import json

import pytest

from runner.prompt.rubric import (
    NO_VERDICT,
    CriterionVote,
    VerdictError,
    parse_verdict,
    rubric_passes,
    tally,
)
from runner.prompt.rubric.verdict import REASON_LIMIT


def _verdict(*entries: tuple[int, object, object]) -> str:
    return json.dumps(
        {"criteria": [{"criterion": n, "pass": p, "reason": r} for n, p, r in entries]}
    )


def test_a_well_formed_verdict_is_read_in_criterion_order() -> None:
    text = _verdict((2, False, "misses add"), (1, True, "names all"))
    assert parse_verdict(text, 2) == [
        CriterionVote(True, "names all"),
        CriterionVote(False, "misses add"),
    ]


def test_one_json_fence_around_the_verdict_is_tolerated() -> None:
    text = "```json\n" + _verdict((1, True, "ok")) + "\n```"
    assert parse_verdict(text, 1) == [CriterionVote(True, "ok")]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("All criteria pass.", "not one JSON object"),
        ("Here it is: " + _verdict((1, True, "ok")), "not one JSON object"),
        ("[]", 'only key is "criteria"'),
        (json.dumps({"criteria": [], "overall": "pass"}), 'only key is "criteria"'),
        (json.dumps({"criteria": {"1": True}}), "must be a list"),
        (_verdict((1, "true", "ok")), '"pass" must be true or false'),
        (_verdict((1, 1, "ok")), '"pass" must be true or false'),
        (_verdict((1, True, "")), '"reason" must be a non-empty string'),
        (_verdict((1, True, None)), '"reason" must be a non-empty string'),
        (_verdict((True, True, "ok")), '"criterion" must be a number from 1 to 1'),
        (_verdict((2, True, "ok")), '"criterion" must be a number from 1 to 1'),
        (_verdict((1, True, "ok"), (1, False, "no")), "graded twice"),
        (json.dumps({"criteria": [{"criterion": 1, "pass": True}]}), "exactly the keys"),
        (
            json.dumps({"criteria": [{"criterion": 1, "pass": True, "reason": "r", "x": 1}]}),
            "exactly the keys",
        ),
    ],
)
def test_a_malformed_verdict_is_refused_saying_why(text: str, problem: str) -> None:
    with pytest.raises(VerdictError, match=problem.replace("(", r"\(")):
        parse_verdict(text, 1)


def test_a_verdict_that_leaves_a_criterion_out_is_refused() -> None:
    with pytest.raises(VerdictError, match="criteria 2, 3 are not graded"):
        parse_verdict(_verdict((1, True, "ok")), 3)


def test_a_long_reason_is_cut_and_put_on_one_line() -> None:
    (vote,) = parse_verdict(_verdict((1, False, "a\n\nb " + "x" * 5000)), 1)
    assert vote.reason.startswith("a b x") and len(vote.reason) == REASON_LIMIT


def test_the_majority_of_votes_decides_each_criterion() -> None:
    ballots = [
        [CriterionVote(True, "y1"), CriterionVote(False, "n1")],
        [CriterionVote(False, "n2"), CriterionVote(False, "n2b")],
        [CriterionVote(True, "y3"), CriterionVote(True, "y3b")],
    ]
    first, second = tally(["a", "b"], ballots)
    assert first.passed and first.votes == (True, False, True)
    assert first.reasons == ("y1", "n2", "y3")
    assert not second.passed and second.votes == (False, False, True)


def test_a_vote_without_a_valid_verdict_fails_every_criterion() -> None:
    ballots = [[CriterionVote(True, "y")], None, None]
    (only,) = tally(["a"], ballots)
    assert not only.passed
    assert only.reasons == ("y", NO_VERDICT, NO_VERDICT)


@pytest.mark.parametrize(
    ("passes", "rule", "expected"),
    [
        ((True, True, True), "all", True),
        ((True, True, False), "all", False),
        ((True, True, True, False, False), 0.6, True),
        ((True, True, False, False, False), 0.6, False),
        ((True, False, False), 1 / 3, True),
        ((False, False, False), 0.01, False),
    ],
)
def test_the_rubric_passes_by_its_rule(
    passes: tuple[bool, ...], rule: str | float, expected: bool
) -> None:
    tallies = tally(
        [f"c{i}" for i in range(len(passes))], [[CriterionVote(p, "r") for p in passes]]
    )
    assert rubric_passes(tallies, rule) is expected
