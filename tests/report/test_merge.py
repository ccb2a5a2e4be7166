"""`report merge`: shard JUnit files and summaries join into one; bad inputs are named."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from runner.errors import ConfigError, ExitCode
from runner.outcome import Status
from runner.report.junit import merge_junit, write_junit
from runner.report.summary import merge_summaries, write_summary_json
from tests.report.samples import (
    REDACTOR,
    mixed_outcomes,
    needs_shared,
    outcome,
    run_validator,
    summary_of,
    validate_with_lxml,
)


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    first = summary_of(mixed_outcomes()[:2], run_id="run-a", exit_code=ExitCode.FAILED)
    second = summary_of(mixed_outcomes()[2:], run_id="run-b", exit_code=ExitCode.SIGINT)
    paths = []
    for index, summary in enumerate((first, second)):
        path = tmp_path / f"shard{index}" / "junit.xml"
        write_junit(summary, path, REDACTOR)
        write_summary_json(summary, path.with_name("summary.json"), REDACTOR)
        paths.append(path)
    return paths


@needs_shared
def test_merged_junit_validates(shards: list[Path], tmp_path: Path) -> None:
    merged = tmp_path / "merged.xml"
    merge_junit(shards, merged)
    assert validate_with_lxml(merged) == []
    result = run_validator(merged)
    assert result.returncode == 0, result.stdout


def test_merged_junit_sums_counts_and_times(shards: list[Path], tmp_path: Path) -> None:
    merged = tmp_path / "merged.xml"
    merge_junit(shards, merged)
    root = ET.parse(merged).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2", "2")
    assert float(root.get("time", "")) == pytest.approx(7.5)
    assert len(root.findall("testsuite")) == 3
    assert len(list(root.iter("testcase"))) == 5


def test_merge_accepts_a_testsuite_rooted_file(shards: list[Path], tmp_path: Path) -> None:
    single = tmp_path / "single.xml"
    single.write_text(
        '<testsuite name="other" tests="1" failures="1" time="2">'
        '<testcase name="x" time="2"><failure message="no"/></testcase></testsuite>',
        encoding="utf-8",
    )
    merged = tmp_path / "merged.xml"
    merge_junit([*shards, single], merged)
    root = ET.parse(merged).getroot()
    assert (root.get("tests"), root.get("failures")) == ("6", "3")
    assert float(root.get("time", "")) == pytest.approx(9.5)


def test_merge_of_malformed_junit_names_the_file(shards: list[Path], tmp_path: Path) -> None:
    bad = tmp_path / "broken.xml"
    bad.write_text("<testsuites><testsuite name='x'>", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.xml: not well-formed"):
        merge_junit([shards[0], bad], tmp_path / "merged.xml")
    assert not (tmp_path / "merged.xml").exists()


def test_merge_of_missing_or_foreign_junit_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.xml: JUnit file not found"):
        merge_junit([tmp_path / "nope.xml"], tmp_path / "merged.xml")
    html = tmp_path / "page.xml"
    html.write_text("<html/>", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"page\.xml: root element is <html>"):
        merge_junit([html], tmp_path / "merged.xml")
    with pytest.raises(ConfigError, match="no JUnit files"):
        merge_junit([], tmp_path / "merged.xml")


def test_merged_summary_joins_tasks_sums_totals_and_keeps_the_worst_code(
    shards: list[Path], tmp_path: Path
) -> None:
    merged = tmp_path / "summary.json"
    merge_summaries([p.with_name("summary.json") for p in shards], merged)
    data = json.loads(merged.read_text(encoding="utf-8"))
    assert [t["name"] for t in data["tasks"]] == ["health", "lint", "refactor", "deploy", "docs"]
    assert (data["passed"], data["failed"]) == (1, 4)
    assert data["totals"]["turns"] == 15
    assert data["totals"]["cost_usd"] == pytest.approx(0.05)
    assert data["exit_code"] == 130
    assert data["run_ids"] == ["run-a", "run-b"]
    assert data["run_id"] == "run-a,run-b"
    assert data["model"] == "openai:gpt-test"


def test_merged_summary_of_failed_and_budget_shards_exits_failed(tmp_path: Path) -> None:
    paths = []
    shards: list[tuple[str, Status, int]] = [
        ("a", "budget_exceeded", 5),
        ("b", "failed", 1),
        ("c", "passed", 0),
    ]
    for name, status, code in shards:
        path = tmp_path / f"{name}.json"
        task = outcome(name, status, exit_code=ExitCode(code))
        write_summary_json(summary_of([task], exit_code=ExitCode(code)), path, REDACTOR)
        paths.append(path)
    merge_summaries(paths, tmp_path / "merged.json")
    assert json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))["exit_code"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a JSON summary"),
        ('{"tasks": []}', "not an agent-runner summary"),
        ("[1, 2]", "not an agent-runner summary"),
        ('{"tasks": [1], "totals": {}, "exit_code": 0}', "not an agent-runner summary"),
        ('{"tasks": [], "totals": {"turns": "x"}, "exit_code": 0}', "not an agent-runner summary"),
    ],
)
def test_merge_of_malformed_summary_names_the_file(
    shards: list[Path], tmp_path: Path, content: str, message: str
) -> None:
    bad = tmp_path / "bad-summary.json"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"bad-summary\.json: {message}"):
        merge_summaries([shards[0].with_name("summary.json"), bad], tmp_path / "out.json")


def test_merge_of_missing_summary_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"gone\.json: summary file not found"):
        merge_summaries([tmp_path / "gone.json"], tmp_path / "out.json")
