"""Every column and field of the findings' GitHub reports that carries the model's text is
masked (DESIGN 7b, 21): the step summary table's task, path and title; the annotation's file,
title and message; each one alone, so no field can be left out unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.outcome import Finding, TaskOutcome
from runner.redact import Redactor
from runner.report import finding_annotations, findings_table

SECRET = "sk-findings-0123456789abcdef"
REDACTOR = Redactor([SECRET])


def _outcome(field: str) -> TaskOutcome:
    """One finding with the secret in `field` (the task's name or a field of the finding)."""
    text = {"name": "t", "path": "src/a.py", "title": "Bug", "message": "wrong"}
    text[field] = f"{text[field]}-{SECRET}-end"
    finding = Finding(text["path"], 3, 4, "error", text["title"], text["message"], None, "fp")
    return TaskOutcome(
        name=text["name"], task_file=Path("t.yaml"), status="failed", findings=(finding,)
    )


@pytest.mark.parametrize("field", ["name", "path", "title"])
def test_every_column_of_the_findings_table_is_masked(field: str) -> None:
    table = findings_table([_outcome(field)], REDACTOR)
    (row,) = [line for line in table.splitlines() if line.startswith("| ") and "error" in line]
    assert SECRET not in table
    assert "***" in row
    assert len(re.split(r"(?<!\\)\|", row)) == 6


@pytest.mark.parametrize("field", ["path", "title", "message"])
def test_every_field_of_a_finding_annotation_is_masked(field: str) -> None:
    (line,) = finding_annotations([_outcome(field)], REDACTOR)
    assert SECRET not in line and "***" in line


def test_the_where_column_is_the_path_and_line_in_one_code_span() -> None:
    table = findings_table([_outcome("name")], Redactor())
    assert "| `src/a.py:3` |" in table
    odd = Finding("a`b|c.py", 7, 7, "warning", "T", "m", None, "fp")
    row = findings_table(
        [TaskOutcome(name="x", task_file=Path("t.yaml"), status="passed", findings=(odd,))],
        Redactor(),
    )
    (line,) = [line for line in row.splitlines() if "c.py" in line]
    assert line.endswith("| ``a`b\\|c.py:7`` | T |")
    assert len(re.split(r"(?<!\\)\|", line)) == 6  # four cells between the outer pipes


def test_a_task_that_asked_for_no_findings_beside_one_that_did_is_left_out() -> None:
    plain = TaskOutcome(name="plain", task_file=Path("t.yaml"), status="passed")
    table = findings_table([plain, _outcome("title")], Redactor())
    assert "| t | error |" in table and "plain" not in table
    assert len(finding_annotations([plain, _outcome("title")], Redactor())) == 1


def test_a_review_body_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    from runner.errors import ConfigError
    from runner.report.findings import merge_reviews

    for bad in (tmp_path / "missing.json", tmp_path):
        with pytest.raises(ConfigError, match="cannot read review body"):
            merge_reviews([bad], tmp_path / "out.json")
