"""Run summaries the report tests share: every status, across a single-task file and a suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runner.errors import ExitCode
from runner.outcome import RunSummary, Status, TaskOutcome, Totals
from runner.redact import Redactor

SECRET = "sk-test-Zx9SECRETvalue42"
REDACTOR = Redactor([SECRET])
SHARED = Path(__file__).parents[2] / ".." / "shared"
XSD = SHARED / "junit" / "jenkins-junit-4.xsd"
VALIDATOR = SHARED / "junit" / "validate_junit.py"


def outcome(
    name: str,
    status: Status,
    *,
    task_file: str = "tasks/suite.yaml",
    kind: str = "",
    reason: str = "",
    result: str = "",
    exit_code: ExitCode = ExitCode.OK,
    cost: float = 0.01,
    duration: float = 1.5,
) -> TaskOutcome:
    return TaskOutcome(
        name=name,
        task_file=Path(task_file),
        status=status,
        reason=reason,
        result=result,
        kind=kind,
        exit_code=exit_code,
        model="openai:gpt-test",
        totals=Totals(
            turns=3,
            input_tokens=1000,
            output_tokens=234,
            cost_usd=cost,
            tool_calls=2,
            duration_s=duration,
        ),
        session_log=Path(f"agent-runs/sessions/{name}.jsonl"),
        session_id=f"sess-{name}",
    )


def mixed_outcomes() -> list[TaskOutcome]:
    """One of each status: a passed single-task file, and a suite file holding the rest."""
    return [
        outcome(
            "health",
            "passed",
            task_file="tasks/health.yaml",
            result=f"Added /health; token was {SECRET}",
        ),
        outcome(
            "lint",
            "failed",
            kind="check",
            reason=f"check `ruff check` exited 1:\nE501 line too long ({SECRET})",
            result="Done, I think.",
            exit_code=ExitCode.FAILED,
        ),
        outcome(
            "refactor",
            "budget_exceeded",
            kind="cost",
            reason="spent $2.0100 of max_cost_usd 2.0",
            exit_code=ExitCode.BUDGET,
        ),
        outcome(
            "deploy",
            "error",
            kind="provider",
            reason=f"401 from api.openai.com with key {SECRET}",
            exit_code=ExitCode.INFRASTRUCTURE,
        ),
        outcome("docs", "interrupted", reason="SIGINT", exit_code=ExitCode.SIGINT),
    ]


def summary_of(
    outcomes: list[TaskOutcome], run_id: str = "run-1", exit_code: ExitCode = ExitCode.SIGINT
) -> RunSummary:
    return RunSummary(
        run_id=run_id,
        runner_version="0.1.0",
        model="openai:gpt-test",
        outcomes=outcomes,
        exit_code=exit_code,
        out_dir=Path("agent-runs"),
        junit_path=Path("agent-runs/junit.xml"),
    )


needs_shared = pytest.mark.skipif(
    not XSD.is_file(), reason="../shared/junit (the JUnit schemas) is not beside this checkout"
)


def validate_with_lxml(path: Path) -> list[str]:
    from lxml import etree  # type: ignore[import-untyped]  # a dev dependency, no stubs

    doc = etree.parse(str(path))
    for case in doc.iter("testcase"):
        case.attrib.pop("file", None)
        case.attrib.pop("line", None)
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    schema.validate(doc)
    return [f"line {e.line}: {e.message}" for e in schema.error_log]


def run_validator(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(VALIDATOR),
            "--schema",
            "jenkins-junit-4",
            "--ignore-attr",
            "testcase@file,testcase@line",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
