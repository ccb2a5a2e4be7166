"""`success.rubric` as the task model reads and records it (DESIGN 27)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runner.task import Rubric, Success, TaskSpec


def test_a_task_without_a_rubric_is_recorded_as_before_rubrics_existed() -> None:
    recorded = TaskSpec(prompt="p").model_dump(mode="json")["success"]
    assert "rubric" not in recorded  # an older log's task must not read as drifted on resume


def test_a_rubric_is_recorded_with_pass_under_its_own_name() -> None:
    success = Success.model_validate(
        {"rubric": {"criteria": [" Names add() "], "grader": "openai:gpt-4.1-mini", "pass": 0.5}}
    )
    recorded = success.model_dump(mode="json")["rubric"]
    assert recorded["pass"] == 0.5 and "pass_" not in recorded
    assert recorded["criteria"] == ["Names add()"]
    assert Success.model_validate({"rubric": recorded}) == success


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"criteria": [], "grader": "g"}, "at least 1 item"),
        ({"criteria": ["a", ""], "grader": "g"}, "criterion 2 is empty"),
        ({"criteria": ["a"]}, "Field required"),
        ({"criteria": ["a"], "grader": ""}, "at least 1 character"),
        ({"criteria": ["a"], "grader": "g", "votes": 2}, "votes must be odd"),
        ({"criteria": ["a"], "grader": "g", "votes": 0}, "greater than or equal to 1"),
        ({"criteria": ["a"], "grader": "g", "votes": 11}, "less than or equal to 9"),
        ({"criteria": ["a"], "grader": "g", "pass": 0}, "a fraction of the criteria"),
        ({"criteria": ["a"], "grader": "g", "pass": "most"}, "Input should be 'all'"),
        ({"criteria": ["a"], "grader": "g", "max_cost_usd": 0}, "greater than 0"),
        ({"criteria": ["a"], "grader": "g", "pass_": 1}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_rubric_is_refused_naming_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Rubric.model_validate(fields)
