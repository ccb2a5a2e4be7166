"""`report merge` joins shard reports: every testcase kept, totals summed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from runner.errors import ExitCode
from runner.outcome import RunSummary, TaskOutcome, Totals
from runner.redact import Redactor
from runner.report.junit import write_junit
from runner.report.summary import write_summary_json


def shard(tmp_path: Path, name: str, outcomes: list[TaskOutcome]) -> tuple[Path, Path]:
    summary = RunSummary(
        run_id=name,
        runner_version="0",
        model="m",
        outcomes=outcomes,
        exit_code=ExitCode.OK,
        out_dir=tmp_path,
    )
    junit, summary_path = tmp_path / f"{name}.xml", tmp_path / f"{name}.json"
    write_junit(summary, junit, Redactor())
    write_summary_json(summary, summary_path, Redactor())
    return junit, summary_path


def outcome(name: str, status, cost: float) -> TaskOutcome:
    code = {"passed": ExitCode.OK, "failed": ExitCode.FAILED}[status]
    return TaskOutcome(
        name=name,
        task_file=Path(f"{name}.yaml"),
        status=status,
        exit_code=code,
        totals=Totals(turns=2, cost_usd=cost),
    )


def test_report_merge_keeps_every_testcase_and_sums_totals(run_cli, tmp_path):
    a_xml, a_json = shard(
        tmp_path, "a", [outcome("t1", "passed", 0.5), outcome("t2", "failed", 0.25)]
    )
    b_xml, b_json = shard(tmp_path, "b", [outcome("t3", "passed", 1.0)])
    out = tmp_path / "merged.xml"
    result = run_cli(
        "report",
        "merge",
        str(a_xml),
        str(b_xml),
        "-o",
        str(out),
        "--summary",
        str(a_json),
        str(b_json),
    )
    assert result.returncode == 0, result.stderr
    root = ET.parse(out).getroot()
    assert sorted(c.get("name") for c in root.iter("testcase")) == ["t1", "t2", "t3"]
    assert root.get("tests") == "3" and root.get("failures") == "1"
    merged = json.loads(out.with_name("summary.json").read_text(encoding="utf-8"))
    assert merged["totals"]["cost_usd"] == 1.75 and merged["passed"] == 2 and merged["failed"] == 1


def test_report_merge_names_a_malformed_input(run_cli, tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<testsuites>", encoding="utf-8")
    result = run_cli("report", "merge", str(bad), "-o", str(tmp_path / "out.xml"))
    assert result.returncode == 2
    assert "bad.xml" in result.stderr


def timed(name: str, duration: float, file: str = "suite.yaml") -> TaskOutcome:
    return TaskOutcome(
        name=name,
        task_file=Path(file),
        status="passed",
        exit_code=ExitCode.OK,
        totals=Totals(turns=1, cost_usd=0.1, duration_s=duration),
    )


def test_report_merge_writes_times_and_costs_without_float_noise(run_cli, tmp_path):
    a_xml, a_json = shard(tmp_path, "a", [timed("t1", 0.3), timed("t2", 0.6)])
    b_xml, b_json = shard(tmp_path, "b", [timed("t3", 0.2, "other.yaml")])
    out = tmp_path / "merged" / "junit.xml"
    result = run_cli(
        "report",
        "merge",
        str(a_xml),
        str(b_xml),
        "-o",
        str(out),
        "--summary",
        str(a_json),
        str(b_json),
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert "99999" not in text and "00000000" not in text
    root = ET.parse(out).getroot()
    assert root.get("time") == "1.100"
    assert [s.get("time") for s in root.findall("testsuite")] == ["0.900", "0.200"]
    merged = json.loads((tmp_path / "merged" / "summary.json").read_text(encoding="utf-8"))
    assert merged["totals"]["cost_usd"] == 0.3  # not 0.30000000000000004
    assert merged["totals"]["duration_s"] == 1.1


def test_report_merge_writes_summary_json_beside_out_naming_the_merged_junit(run_cli, tmp_path):
    a_xml, a_json = shard(tmp_path, "a", [timed("t1", 0.3)])
    (tmp_path / "merged").mkdir()
    result = run_cli(
        "report", "merge", str(a_xml), "-o", "merged/junit.xml", "--summary", str(a_json)
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "merged" / "junit.json").exists()
    merged = json.loads((tmp_path / "merged" / "summary.json").read_text(encoding="utf-8"))
    assert merged["junit"] == "merged/junit.xml"


def test_report_merge_summary_output_is_where_asked(run_cli, tmp_path):
    a_xml, a_json = shard(tmp_path, "a", [timed("t1", 0.3)])
    result = run_cli(
        "report",
        "merge",
        str(a_xml),
        "-o",
        "out.xml",
        "--summary",
        str(a_json),
        "--summary-output",
        "all.json",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))["junit"] == "out.xml"
    assert not (tmp_path / "summary.json").exists()


def test_report_merge_help_documents_summary(run_cli):
    result = run_cli("report", "merge", "--help")
    assert result.returncode == 0
    assert "--summary SUMMARY_JSON" in result.stdout
    assert "summary.json beside OUT" in " ".join(result.stdout.split())


def test_report_merge_refuses_a_malformed_count_with_exit_2(run_cli, tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuite name="s" disabled="many"><testcase/></testsuite>', encoding="utf-8")
    result = run_cli("report", "merge", str(bad), "-o", str(tmp_path / "out.xml"))
    assert result.returncode == 2
    assert "bad.xml: <testsuite name='s'> has disabled='many', expected a whole number" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
