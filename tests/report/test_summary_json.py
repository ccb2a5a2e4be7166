"""The JSON summary: every task's own status and facts, redacted, and the run's exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.errors import ExitCode
from runner.report.summary import exit_code_of, summary_json, summary_text, write_summary_json
from tests.report.samples import REDACTOR, SECRET, mixed_outcomes, outcome, summary_of


def test_summary_carries_run_facts_and_each_task() -> None:
    data = summary_json(summary_of(mixed_outcomes()))
    assert data["run_id"] == "run-1"
    assert data["runner_version"] == "0.1.0"
    assert data["exit_code"] == 130
    assert (data["passed"], data["failed"]) == (1, 4)
    assert data["totals"]["tokens"] == 5 * 1234
    assert data["junit"] == "agent-runs/junit.xml"
    refactor = data["tasks"][2]
    assert refactor == {
        "name": "refactor",
        "file": "tasks/suite.yaml",
        "status": "budget_exceeded",
        "kind": "cost",
        "reason": "spent $2.0100 of max_cost_usd 2.0",
        "result": "",
        "exit_code": 5,
        "model": "openai:gpt-test",
        "turns": 3,
        "tokens": 1234,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "input_tokens": 1000,
        "output_tokens": 234,
        "request_tokens": {"system_tokens": 0, "tools_tokens": 0, "messages_tokens": 0},
        "tool_calls": 2,
        "cost_usd": 0.01,
        "duration_s": 1.5,
        "session_log": "agent-runs/sessions/refactor.jsonl",
        "session_id": "sess-refactor",
        "check_output": None,
        "structured_result": None,
        "child_sessions": [],
        "sandbox": None,
        "patch": None,
        "worktree": None,
    }


def test_written_summary_is_redacted_json(tmp_path: Path) -> None:
    path = tmp_path / "out" / "summary.json"
    write_summary_json(summary_of(mixed_outcomes()), path, REDACTOR)
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert json.loads(text)["tasks"][0]["result"] == "Added /health; token was ***"
    assert SECRET not in summary_text(summary_of(mixed_outcomes()), REDACTOR)


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ([0, 5, 1, 4, 3], 3),
        ([0, 5, 1, 4], 4),
        ([5, 0, 1], 1),
        ([0, 5, 0], 5),
        ([0, 0], 0),
        ([], 0),
    ],
)
def test_worst_exit_code_wins_in_the_order_3_4_1_5_0(codes: list[int], expected: int) -> None:
    outcomes = [outcome(f"t{i}", "passed", exit_code=ExitCode(c)) for i, c in enumerate(codes)]
    assert exit_code_of(outcomes) == ExitCode(expected)
