"""`findings.sarif` (DESIGN 21) over time: rule ids and fingerprints that stay the same from one
run and one release to the next (code scanning tracks an alert by them), the file written when a
task asked for findings, and a merge that refuses what is not SARIF and keeps each result once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError
from runner.outcome import Finding, TaskOutcome
from runner.report.sarif import FINGERPRINT_KEY, merge_sarif, rule_id, sarif_document, write_sarif
from tests.report.samples import REDACTOR, summary_of


def task(*findings: Finding) -> TaskOutcome:
    return TaskOutcome(name="review", task_file=Path("t.yaml"), status="passed", findings=findings)


def test_rule_ids_are_a_readable_slug_and_a_hash_that_never_change() -> None:
    # Known values: a new slug or hash length would close every open alert and open it anew.
    assert rule_id("Unused import") == "unused-import-078396"
    long = "SQL built from user input, unescaped, in a loop over every row of the table"
    assert rule_id(long) == "sql-built-from-user-input-unescaped-in-a-loop-ov-fa8397"
    assert rule_id("!!! ???") == "finding-2618f6"


def test_the_same_finding_twice_gets_fingerprints_counted_from_one() -> None:
    same = Finding("a.py", 3, 3, "warning", "Dup", "again", None, "abc")
    other = Finding("b.py", 1, 1, "note", "Other", "once", None, "def")
    (run,) = sarif_document([task(same, other, same)], "1.0")["runs"]
    prints = [result["partialFingerprints"][FINGERPRINT_KEY] for result in run["results"]]
    assert prints == ["abc:1", "def:1", "abc:2"]


def test_write_sarif_writes_the_document_of_the_tasks_findings(tmp_path: Path) -> None:
    found = Finding("a.py", 3, 4, "error", "Bug", "off by one", "x = 1\n", "fp")
    summary = summary_of([task(found)])
    write_sarif(summary, tmp_path / "findings.sarif", REDACTOR)
    written = json.loads((tmp_path / "findings.sarif").read_text(encoding="utf-8"))
    assert written == sarif_document(summary.outcomes, summary.runner_version)


def sarif_file(path: Path, runs: list[dict[str, Any]], schema: str | None = None) -> Path:
    document: dict[str, Any] = {"version": "2.1.0", "runs": runs}
    if schema:
        document["$schema"] = schema
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "cannot read SARIF file {path}: Expecting property name"),
        ('{"runs": {}}', "{path} is not a SARIF log (no `runs` list)"),
        ("[1, 2]", "{path} is not a SARIF log (no `runs` list)"),
    ],
)
def test_a_merge_refuses_a_file_that_is_not_sarif_and_names_it(
    tmp_path: Path, text: str, problem: str
) -> None:
    bad = tmp_path / "shard.sarif"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        merge_sarif([bad], tmp_path / "out.sarif")
    assert str(raised.value).startswith(problem.format(path=bad))
    assert not (tmp_path / "out.sarif").exists()


def test_a_merge_keeps_the_shards_schema(tmp_path: Path) -> None:
    oasis = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/os/schemas/sarif-schema-2.1.0.json"
    shard = sarif_file(tmp_path / "a.sarif", [], schema=oasis)
    merge_sarif([shard], tmp_path / "out.sarif")
    assert json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))["$schema"] == oasis


def test_a_merge_keeps_each_result_once_by_fingerprint_or_else_whole(tmp_path: Path) -> None:
    def result(text: str, fingerprint: str | None) -> dict[str, Any]:
        found: dict[str, Any] = {"ruleId": "r", "message": {"text": text}}
        if fingerprint:
            found["partialFingerprints"] = {FINGERPRINT_KEY: fingerprint}
        return found

    unprinted = result("plain", None)
    reordered = dict(reversed(list(unprinted.items())))
    results = [
        result("first wording", "fp:1"),
        result("second wording", "fp:1"),  # the same finding, worded anew by a re-run
        unprinted,
        reordered,  # from another tool: the same result, its keys in another order
        result("another", "fp:2"),
    ]
    run = {"automationDetails": {"id": "agent-runner/t/"}, "results": results}
    merge_sarif([sarif_file(tmp_path / "a.sarif", [run])], tmp_path / "out.sarif")
    (merged,) = json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))["runs"]
    assert [r["message"]["text"] for r in merged["results"]] == [
        "first wording",
        "plain",
        "another",
    ]
