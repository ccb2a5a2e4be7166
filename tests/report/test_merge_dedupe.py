"""`report merge` with overlapping inputs: the same file twice is merged once, and a task found
in several inputs (a re-run shard beside its first attempt) is a warning, or with
`--dedupe latest` only its newest copy counts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ExitCode
from runner.report.junit import merge_junit, write_junit
from runner.report.merge import merge_reports
from runner.report.summary import merge_summaries, write_summary_json
from tests.report.samples import REDACTOR, needs_shared, outcome, summary_of, validate_with_lxml

FIRST, SECOND = "20260101T100000Z-aaaa1111", "20260101T110000Z-bbbb2222"
"""Run ids begin with their UTC start time: the second attempt started an hour later."""


def shard(tmp_path: Path, folder: str, run_id: str, outcomes: list[Any]) -> Path:
    path = tmp_path / folder / "junit.xml"
    summary = summary_of(outcomes, run_id=run_id, exit_code=ExitCode.FAILED)
    write_junit(summary, path, REDACTOR)
    write_summary_json(summary, path.with_name("summary.json"), REDACTOR)
    return path


@pytest.fixture
def attempts(tmp_path: Path) -> list[Path]:
    """Shard 1 failed `flaky` on attempt 1 and passed it on attempt 2; shard 2 ran once. The
    later attempt comes first on the command line, as a sorted glob may put it."""
    failed = outcome("flaky", "failed", exit_code=ExitCode.FAILED, reason="nope", cost=0.5)
    first = shard(tmp_path, "s1-attempt-1", FIRST, [outcome("stable", "passed"), failed])
    second = shard(
        tmp_path, "s1-attempt-2", SECOND, [outcome("stable", "passed"), outcome("flaky", "passed")]
    )
    other = shard(tmp_path, "s2-attempt-1", FIRST, [outcome("alone", "failed", reason="x")])
    return [second, first, other]


def names(path: Path) -> list[str]:
    return sorted(c.get("name") or "" for c in ET.parse(path).getroot().iter("testcase"))


def test_the_same_file_twice_is_merged_once_with_a_warning(tmp_path: Path) -> None:
    (path,) = [shard(tmp_path, "s", FIRST, [outcome("one", "passed")])]
    warnings = merge_junit([path, tmp_path / "s" / ".." / "s" / "junit.xml"], tmp_path / "m.xml")
    assert names(tmp_path / "m.xml") == ["one"]
    again = f"{tmp_path}/s/../s/junit.xml"
    assert warnings == [f"warning: {again}: JUnit file given twice; merged once"]
    summary = path.with_name("summary.json")
    assert merge_summaries([summary, summary], tmp_path / "m.json")
    assert json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))["passed"] == 1


def test_a_task_in_several_inputs_is_counted_each_time_with_a_warning(
    attempts: list[Path], tmp_path: Path
) -> None:
    (warning,) = merge_junit(attempts, tmp_path / "m.xml")
    assert names(tmp_path / "m.xml") == ["alone", "flaky", "flaky", "stable", "stable"]
    assert "2 task(s) are in more than one JUnit file" in warning and "flaky, stable" in warning
    assert f"(in {attempts[1]}, {attempts[0]})" in warning  # the files, sorted
    assert "--dedupe latest" in warning


def test_dedupe_latest_keeps_each_tasks_newest_copy_and_recounts(
    attempts: list[Path], tmp_path: Path
) -> None:
    merged = tmp_path / "m.xml"
    (note,) = merge_junit(attempts, merged, "latest")
    assert "left out 2 older one(s)" in note
    root = ET.parse(merged).getroot()
    assert names(merged) == ["alone", "flaky", "stable"]
    assert (root.get("tests"), root.get("failures")) == ("3", "1")
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        assert suite.get("tests") == str(len(cases))
        assert suite.get("failures") == str(sum(c.find("failure") is not None for c in cases))
    flaky = next(c for c in root.iter("testcase") if c.get("name") == "flaky")
    assert flaky.find("failure") is None  # the copy from the later attempt


@needs_shared
def test_a_deduplicated_merge_still_validates(attempts: list[Path], tmp_path: Path) -> None:
    merge_junit(attempts, tmp_path / "m.xml", "latest")
    assert validate_with_lxml(tmp_path / "m.xml") == []


def test_dedupe_latest_takes_the_older_copies_out_of_the_summary_totals(
    attempts: list[Path], tmp_path: Path
) -> None:
    summaries = [p.with_name("summary.json") for p in attempts]
    merge_summaries(summaries, tmp_path / "m.json", dedupe="latest")
    merged = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert sorted(t["name"] for t in merged["tasks"]) == ["alone", "flaky", "stable"]
    assert (merged["passed"], merged["failed"]) == (2, 1)
    assert merged["totals"]["cost_usd"] == pytest.approx(0.03)
    assert merged["totals"]["turns"] == 9 and merged["totals"]["input_tokens"] == 3000
    assert merged["totals"]["tool_calls"] == 6


def test_report_merge_dedupe_latest_on_the_command_line(run_cli, attempts: list[Path]) -> None:
    result = run_cli(
        "report",
        "merge",
        *map(str, attempts),
        "-o",
        "merged/junit.xml",
        "--summary",
        *(str(p.with_name("summary.json")) for p in attempts),
        "--dedupe",
        "latest",
    )
    assert result.returncode == 0, result.stderr
    assert "kept the newest copy" in result.stderr
    merged = json.loads(Path(attempts[0].parents[1], "merged", "summary.json").read_text("utf-8"))
    assert [merged["passed"], merged["failed"]] == [2, 1]


def test_dedupe_latest_keeps_the_newest_runs_findings(attempts: list[Path], tmp_path: Path) -> None:
    def sarif(path: Path, message: str) -> None:
        run = {"automationDetails": {"id": "flaky"}, "results": [{"message": {"text": message}}]}
        (path.parent / "findings.sarif").write_text(json.dumps({"runs": [run]}), encoding="utf-8")

    second, first, _ = attempts
    sarif(first, "from the first attempt")
    sarif(second, "from the second attempt")
    merge_reports(attempts, tmp_path / "m" / "junit.xml", dedupe="latest")
    (run,) = json.loads((tmp_path / "m" / "findings.sarif").read_text(encoding="utf-8"))["runs"]
    assert run["results"][0]["message"]["text"] == "from the second attempt"


def test_a_suite_that_loses_a_copy_recounts_what_it_keeps(tmp_path: Path) -> None:
    """A CI reads each suite's own counts and time too, not only the root's."""
    kept = [
        outcome("stable", "passed", duration=1.0),
        outcome("lint", "failed", reason="r", duration=2.0),
        outcome("deploy", "error", reason="e", duration=4.0),
        outcome("later", "skipped", duration=8.0),
    ]
    older = [
        outcome("flaky", "failed", reason="no", duration=16),
        outcome("net", "error", reason="e"),
        outcome("waits", "skipped"),
    ]
    first = shard(tmp_path, "attempt-1", FIRST, [*kept, *older])
    second = shard(tmp_path, "attempt-2", SECOND, [outcome(o.name, "passed") for o in older])
    merge_junit([first, second], tmp_path / "m.xml", "latest")
    suite = ET.parse(tmp_path / "m.xml").getroot().findall("testsuite")[0]
    assert [c.get("name") for c in suite.findall("testcase")] == [c.name for c in kept]
    counts = [suite.get(k) for k in ("tests", "failures", "errors", "skipped", "time")]
    assert counts == ["4", "1", "1", "1", "15.000"]


def test_a_file_without_a_run_id_counts_as_the_oldest(tmp_path: Path) -> None:
    """A JUnit file from elsewhere names no run: the runner's copy of a task wins over it."""
    foreign = tmp_path / "foreign.xml"
    foreign.write_text(
        '<testsuite name="s"><testcase name="flaky"><failure message="m"/></testcase></testsuite>',
        encoding="utf-8",
    )
    ours = shard(tmp_path, "ours", FIRST, [outcome("flaky", "passed")])
    merge_junit([ours, foreign], tmp_path / "m.xml", "latest")
    (flaky,) = ET.parse(tmp_path / "m.xml").getroot().iter("testcase")
    assert flaky.find("failure") is None
