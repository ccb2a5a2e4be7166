"""JUnit XML: schema-valid, one suite per task file, the right elements per status, redacted."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from runner.errors import ExitCode
from runner.outcome import Finding, Severity
from runner.report.junit import write_junit
from tests.report.samples import (
    REDACTOR,
    SECRET,
    mixed_outcomes,
    needs_shared,
    outcome,
    run_validator,
    summary_of,
    validate_with_lxml,
)


@pytest.fixture
def junit(tmp_path: Path) -> Path:
    path = tmp_path / "out" / "junit.xml"
    write_junit(summary_of(mixed_outcomes()), path, REDACTOR)
    return path


@needs_shared
def test_report_of_every_status_validates_with_the_shared_validator(junit: Path) -> None:
    result = run_validator(junit)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "VALID against jenkins-junit-4" in result.stdout


@needs_shared
def test_report_of_every_status_validates_against_the_xsd_with_lxml(junit: Path) -> None:
    assert validate_with_lxml(junit) == []


def test_each_task_file_gets_one_suite_named_by_its_path(junit: Path) -> None:
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["tasks/health.yaml", "tasks/suite.yaml"]
    assert [c.get("name") for c in suites["tasks/suite.yaml"].findall("testcase")] == [
        "lint",
        "refactor",
        "deploy",
        "docs",
    ]


def test_counts_add_up_on_suites_and_root(junit: Path) -> None:
    root = ET.parse(junit).getroot()
    suite = root.findall("testsuite")[1]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "2")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2", "2")
    assert float(root.get("time", "")) == pytest.approx(7.5)


def test_run_facts_are_properties_of_every_suite(junit: Path) -> None:
    for suite in ET.parse(junit).getroot().findall("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["run_id"] == "run-1"
        assert props["runner_version"] == "0.1.0"
        assert props["model"] == "openai:gpt-test"
        assert props["exit_code"] == "130"
        assert (props["tasks"], props["passed"], props["failed"]) == ("5", "1", "4")
        assert props["tokens"] == str(5 * 1234)
        assert float(props["cost_usd"] or "") == pytest.approx(0.05)


def cases(path: Path) -> dict[str, ET.Element]:
    return {c.get("name", ""): c for c in ET.parse(path).getroot().iter("testcase")}


def test_testcase_carries_classname_file_time_and_facts(junit: Path) -> None:
    lint = cases(junit)["lint"]
    assert lint.get("classname") == "suite"
    assert lint.get("file") == "tasks/suite.yaml"
    assert float(lint.get("time", "")) == pytest.approx(1.5)
    out = lint.findtext("system-out") or ""
    assert out.startswith("Done, I think.\n\n")
    for fact in (
        "status: failed",
        "model: openai:gpt-test",
        "turns: 3",
        "tokens: 1234",
        "cost: $0.0100",
        "session_log: agent-runs/sessions/lint.jsonl",
    ):
        assert fact in out


def test_each_testcase_carries_its_tasks_status(junit: Path) -> None:
    """`status` tells a budget stop from a failed check, and an interruption from an error, where
    `<failure>` and `<error>` alone do not."""
    statuses = {name: case.get("status") for name, case in cases(junit).items()}
    assert statuses == {
        "health": "passed",
        "lint": "failed",
        "refactor": "budget_exceeded",
        "deploy": "error",
        "docs": "interrupted",
    }


def test_failed_task_has_failure_of_its_kind(junit: Path) -> None:
    failure = cases(junit)["lint"].find("failure")
    assert failure is not None
    assert failure.get("type") == "check"
    assert "ruff check" in (failure.get("message") or "")
    assert "E501" in (failure.text or "")


def test_budget_stop_is_a_budget_exceeded_failure_naming_the_limit(junit: Path) -> None:
    failure = cases(junit)["refactor"].find("failure")
    assert failure is not None
    assert failure.get("type") == "budget_exceeded"
    assert (failure.get("message") or "").startswith("cost limit exceeded")


def test_error_and_interrupted_tasks_have_errors(junit: Path) -> None:
    by_name = cases(junit)
    deploy = by_name["deploy"].find("error")
    docs = by_name["docs"].find("error")
    assert deploy is not None and deploy.get("type") == "provider"
    assert docs is not None and docs.get("type") == "interrupted"
    assert by_name["docs"].find("failure") is None
    assert list(by_name["health"].iter("failure")) == list(by_name["health"].iter("error")) == []


def test_secret_appears_nowhere_in_the_report(junit: Path) -> None:
    text = junit.read_text(encoding="utf-8")
    assert SECRET not in text
    assert "***" in text


def test_absolute_task_path_below_cwd_is_written_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    task = outcome("a", "passed", task_file=str(tmp_path / "tasks" / "a.yaml"))
    path = tmp_path / "junit.xml"
    write_junit(summary_of([task], exit_code=ExitCode.OK), path, REDACTOR)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "tasks/a.yaml"


def test_write_replaces_an_old_report_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text("old", encoding="utf-8")
    write_junit(summary_of(mixed_outcomes()), path, REDACTOR)
    assert ET.parse(path).getroot().tag == "testsuites"
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


@needs_shared
def test_control_characters_in_output_keep_the_report_valid(tmp_path: Path) -> None:
    task = outcome(
        "ansi", "failed", kind="check", reason="\x1b[31mred\x1b[0m\x00 and a\rb", result="\x07"
    )
    path = tmp_path / "junit.xml"
    write_junit(summary_of([task], exit_code=ExitCode.FAILED), path, REDACTOR)
    assert validate_with_lxml(path) == []


def finding(severity: Severity) -> Finding:
    return Finding("src/app.py", 3, 3, severity, "Unchecked input", "validate it first")


def reviewed_report(tmp_path: Path) -> Path:
    """A run where one task asked for findings (two notes and an error) and one did not."""
    found = (finding("note"), finding("error"), finding("note"))
    review = replace(outcome("review", "passed", task_file="tasks/review.yaml"), findings=found)
    path = tmp_path / "junit.xml"
    write_junit(summary_of([review, outcome("plain", "passed")]), path, REDACTOR)
    return path


def test_findings_are_counted_by_severity_on_every_suite(tmp_path: Path) -> None:
    """docs/findings.md: each severity is a property, 0 when none was found, on every suite (the
    one of a task that asked for none too: the counts are the run's)."""
    suites = ET.parse(reviewed_report(tmp_path)).getroot().findall("testsuite")
    assert len(suites) == 2
    for suite in suites:
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        counts = (props.get("findings_error"), props.get("findings_warning"))
        assert (*counts, props.get("findings_note")) == ("1", "0", "2")


def test_system_out_counts_the_findings_of_a_task_that_asked_for_them(tmp_path: Path) -> None:
    by_name = cases(reviewed_report(tmp_path))
    lines = (by_name["review"].findtext("system-out") or "").splitlines()
    assert "findings: 1 error, 0 warning, 2 note" in lines
    assert "findings:" not in (by_name["plain"].findtext("system-out") or "")


def test_a_run_where_no_task_asked_for_findings_has_no_findings_properties(junit: Path) -> None:
    names = {p.get("name") or "" for p in ET.parse(junit).getroot().iter("property")}
    assert names and not any(name.startswith("findings_") for name in names)


@needs_shared
def test_a_report_with_findings_validates_against_the_xsd(tmp_path: Path) -> None:
    assert validate_with_lxml(reviewed_report(tmp_path)) == []
