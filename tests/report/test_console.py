"""Console lines and the final table: one plain line per event, aligned, redacted."""

from __future__ import annotations

import re

from runner.errors import ExitCode
from runner.report.console import final_table, task_finished_line, task_started_line
from tests.report.samples import REDACTOR, SECRET, mixed_outcomes, outcome, summary_of


def test_started_line_names_task_and_model() -> None:
    line = task_started_line("lint", "openai:gpt-test", redactor=REDACTOR)
    assert line.split() == ["START", "lint", "(openai:gpt-test)"]


def test_finished_line_has_status_turns_tokens_cost_and_time_on_one_line() -> None:
    line = task_finished_line(outcome("health", "passed"), redactor=REDACTOR)
    assert line.split() == [
        "PASS",
        "health",
        "turns=3",
        "tokens=1,234",
        "cost=$0.0100",
        "time=1.5s",
    ]


def test_finished_line_of_a_failure_gives_kind_and_reason_redacted_on_one_line() -> None:
    lint = mixed_outcomes()[1]
    line = task_finished_line(lint, redactor=REDACTOR)
    assert line.startswith("FAIL")
    assert "\n" not in line
    assert "(check) check `ruff check` exited 1: E501 line too long (***)" in line
    assert SECRET not in line


def test_lines_are_plain_unless_colour_is_asked_for() -> None:
    failed = mixed_outcomes()[1]
    assert "\x1b[" not in task_finished_line(failed, redactor=REDACTOR)
    coloured = task_finished_line(failed, redactor=REDACTOR, color=True)
    assert coloured.startswith("\x1b[31mFAIL")


def test_secret_in_task_name_or_model_is_redacted() -> None:
    line = task_started_line(f"task-{SECRET}", f"openai:{SECRET}", redactor=REDACTOR)
    assert SECRET not in line
    assert "task-***" in line


def test_final_table_is_aligned_with_totals_and_exit_code_meaning() -> None:
    table = final_table(summary_of(mixed_outcomes()), redactor=REDACTOR)
    lines = table.splitlines()
    assert lines[0].split() == ["task", "status", "turns", "tokens", "cost", "time"]
    rows = lines[2:7]
    assert [r.split()[0] for r in rows] == ["health", "lint", "refactor", "deploy", "docs"]
    # Right-aligned numbers end in the same column.
    assert len({len(r) for r in rows}) == 1
    assert lines[8].split()[:2] == ["total", "(5)"]
    assert "6,170" in lines[8] and "$0.0500" in lines[8] and "7.5s" in lines[8]
    assert lines[9] == "exit code 130: interrupted by SIGINT"
    assert "\x1b[" not in table


def test_final_table_colours_only_the_status_cell_when_asked() -> None:
    summary = summary_of(mixed_outcomes())
    plain = final_table(summary, redactor=REDACTOR).splitlines()
    coloured = final_table(summary, redactor=REDACTOR, color=True).splitlines()
    assert "\x1b[32mpassed" in coloured[2]
    assert [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in coloured] == plain


def test_final_table_redacts_task_names() -> None:
    task = outcome(f"leak-{SECRET}", "passed")
    table = final_table(summary_of([task], exit_code=ExitCode.OK), redactor=REDACTOR)
    assert SECRET not in table
    assert "exit code 0: every selected task passed" in table
