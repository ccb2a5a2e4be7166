"""A rubric's grade in the reports (DESIGN 27): summary.json, JUnit, the step summary."""

from __future__ import annotations

import dataclasses

from runner.errors import ExitCode
from runner.outcome import CriterionGrade, Grade, TaskOutcome
from runner.report import rubric_block, summary_json
from runner.report.github import STEP_SUMMARY_LIMIT, step_summary_markdown
from runner.report.junit import junit_text
from tests.report.samples import REDACTOR, SECRET, outcome, summary_of

GRADE = Grade(
    grader="anthropic:claude-sonnet-4-5",
    passed=False,
    criteria=(
        CriterionGrade("Names | every function", True, (True, False, True), ("all", "no", "all")),
        CriterionGrade(
            "Claims nothing false", False, (False, False, True), (f"invents <b>{SECRET}", "x", "ok")
        ),
    ),
    votes=3,
    pass_rule="all",
    attempt=2,
    cost_usd=0.004,
    total_cost_usd=0.007,
)


def graded() -> TaskOutcome:
    task = outcome(
        "summary",
        "failed",
        kind="rubric",
        reason='rubric: 1 of 2 criteria failed (pass: all): "Claims nothing false" (invents)',
        exit_code=ExitCode.FAILED,
    )
    return dataclasses.replace(task, grade=GRADE)


def test_summary_json_has_the_grade_with_every_vote() -> None:
    (task,) = summary_json(summary_of([graded(), outcome("plain", "passed")]))["tasks"][:1]
    grade = task["grade"]
    assert grade["passed"] is False and grade["pass"] == "all" and grade["attempt"] == 2
    assert grade["criteria"][0]["votes"] == [True, False, True]
    assert grade["cost_usd"] == 0.004 and grade["total_cost_usd"] == 0.007
    plain = summary_json(summary_of([outcome("plain", "passed")]))["tasks"][0]
    assert "grade" not in plain


def test_junit_names_each_failed_criterion_with_its_failing_reasons_masked() -> None:
    text = junit_text(summary_of([graded()]), REDACTOR)
    assert SECRET not in text
    assert '<failure type="rubric"' in text
    assert "- Claims nothing false (1 of 3 vote(s) passed it)" in text
    assert "  - invents &lt;b&gt;***\n  - x</failure>" in text  # the failing votes' reasons
    assert "Names | every function (" not in text  # a passed criterion is not a failure
    assert "rubric: failed, 1 of 2 criteria (grader anthropic:claude-sonnet-4-5, 3 vote(s)" in text


def test_the_step_summary_folds_a_table_of_the_criteria() -> None:
    text = step_summary_markdown(summary_of([graded()]), REDACTOR, STEP_SUMMARY_LIMIT)
    assert SECRET not in text
    assert "<details><summary>summary: rubric failed, 1 of 2 criteria" in text
    assert "| Names \\| every function | ✅ ✓✗✓ | all |" in text
    # A failed criterion shows a failing vote's reason, escaped and masked.
    assert "| Claims nothing false | ❌ ✗✗✓ | invents &lt;b&gt;*** |" in text


def test_the_console_lists_each_failed_criterion_under_the_tasks_line() -> None:
    block = rubric_block(graded(), redactor=REDACTOR)
    lines = block.splitlines()
    assert "rubric (grader anthropic:claude-sonnet-4-5): 1 criteria failed" in lines[0]
    assert lines[1].endswith("| Claims nothing false: invents <b>***")
    assert len(lines) == 2 and SECRET not in block
    assert rubric_block(outcome("plain", "failed", kind="check"), redactor=REDACTOR) == ""
