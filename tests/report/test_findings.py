"""The findings' reports (DESIGN 21): SARIF valid against the official schema with stable rule ids,
annotations within GitHub's limits and escaped, a step summary table that stays a table, review
comments whose suggestion blocks hold any text, and merges that keep every finding once."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from runner.errors import ConfigError
from runner.outcome import Finding, Severity, TaskOutcome
from runner.redact import Redactor
from runner.report import finding_annotations, findings_table
from runner.report.findings import merge_reviews, review_body, write_review
from runner.report.sarif import merge_sarif, rule_id, sarif_document, write_sarif
from tests.report.samples import REDACTOR, SECRET, summary_of

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text("utf-8"))


def finding(n: int, severity: Severity = "error", **over: str) -> Finding:
    fields = {"title": f"Problem {n % 3}", "message": f"message {n}", "path": "src/a b.py"}
    fields.update(over)
    return Finding(
        fields["path"], n + 1, n + 1, severity, fields["title"], fields["message"],
        fields.get("suggestion"), f"fp{n}",
    )  # fmt: skip


def task(name: str, *findings: Finding) -> TaskOutcome:
    return TaskOutcome(name=name, task_file=Path("t.yaml"), status="passed", findings=findings)


def test_sarif_validates_with_rules_from_titles_and_uri_encoded_paths() -> None:
    outcomes = [
        task("a", *(finding(n) for n in range(4)), finding(9, "note", suggestion="x = 1\n")),
        task("b"),
        TaskOutcome(name="no-findings", task_file=Path("t.yaml"), status="passed"),
    ]
    document = sarif_document(outcomes, "1.2.3")
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    first, second = document["runs"]
    assert second["results"] == []  # asked for findings, found none: alerts can close
    rules = first["tool"]["driver"]["rules"]
    assert [r["name"] for r in rules] == ["Problem 0", "Problem 1", "Problem 2"]
    assert rule_id("Problem  0") == rules[0]["id"] == rule_id("problem 0")
    uri = first["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "src/a%20b.py"
    assert first["results"][-1]["fixes"][0]["artifactChanges"][0]["replacements"]


def test_write_sarif_masks_and_writes_nothing_when_no_task_asked(tmp_path: Path) -> None:
    plain = summary_of([TaskOutcome(name="x", task_file=Path("t.yaml"), status="passed")])
    write_sarif(plain, tmp_path / "none.sarif", REDACTOR)
    write_review(plain, tmp_path / "none.json", REDACTOR)
    assert not list(tmp_path.iterdir())
    secretive = summary_of([task("t", finding(1, message=f"key {SECRET}"))])
    write_sarif(secretive, tmp_path / "f.sarif", REDACTOR)
    write_review(secretive, tmp_path / "r.json", REDACTOR)
    for path in tmp_path.iterdir():
        assert SECRET not in path.read_text(encoding="utf-8")


def test_annotations_stop_at_githubs_limits_and_count_the_rest() -> None:
    errors = [finding(n) for n in range(25)]
    notes = [finding(n, "note") for n in range(3)]
    lines = finding_annotations([task("t", *notes, *errors)], Redactor(), errors_used=2)
    assert sum(line.startswith("::error ") for line in lines) == 8
    assert sum(line.startswith("::notice ") for line in lines) == 3
    assert lines[-1].startswith("agent-runner: 17 more finding(s) not annotated")


def test_an_annotation_escapes_what_would_end_its_properties_or_message() -> None:
    hostile = finding(1, title="a,b::c%", message="line\n::error::injected\r%", path="x,y:z.py")
    (line,) = finding_annotations([task("t", hostile)], Redactor())
    assert line == (
        "::error file=x%2Cy%3Az.py,line=2,endLine=2,title=a%2Cb%3A%3Ac%25"
        "::line%0A::error::injected%0D%25"
    )


def test_the_step_summary_table_keeps_model_text_inside_its_cells() -> None:
    hostile = finding(1, title="<img src=x> | col\nrow")
    text = findings_table([task("t|x", hostile)], REDACTOR)
    row = next(line for line in text.splitlines() if "img" in line)
    assert row.count(" | ") == 3 and "&lt;img" in row and "\\|" in row
    assert (
        findings_table([TaskOutcome(name="x", task_file=Path("t"), status="passed")], REDACTOR)
        == ""
    )


def test_a_suggestion_with_a_fence_inside_gets_a_longer_fence() -> None:
    fenced = finding(1, suggestion="```\ncode\n```")
    (comment,) = review_body([task("t", fenced)])["comments"]
    assert "````suggestion\n```\ncode\n```\n````" in comment["body"]
    deleted = finding(2, suggestion="")
    (comment,) = review_body([task("t", deleted)])["comments"]
    assert comment["body"].endswith("```suggestion\n```")


def test_merges_keep_every_run_and_every_finding_once(tmp_path: Path) -> None:
    shard_a = sarif_document([task("a", finding(1)), task("b", finding(2))], "1")
    shard_b = sarif_document([task("a", finding(1)), task("c", finding(3))], "1")
    paths = []
    for name, document in (("a", shard_a), ("b", shard_b)):
        path = tmp_path / f"{name}.sarif"
        path.write_text(json.dumps(document), encoding="utf-8")
        paths.append(path)
        review = tmp_path / f"{name}.json"
        outcomes = [task(run["properties"]["task"], finding(1)) for run in document["runs"]]
        review.write_text(json.dumps(review_body(outcomes)), encoding="utf-8")
    assert merge_sarif(paths, tmp_path / "merged.sarif") == 3
    merged = json.loads((tmp_path / "merged.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(merged)
    assert sum(len(run["results"]) for run in merged["runs"]) == 3
    merge_reviews([tmp_path / "a.json", tmp_path / "b.json"], tmp_path / "review.json")
    review = json.loads((tmp_path / "review.json").read_text(encoding="utf-8"))
    assert len(review["comments"]) == 3  # a's and c's comment on the same line differ by task


def test_a_summary_lists_each_tasks_findings_and_counts() -> None:
    from runner.report import summary_json

    data = summary_json(summary_of([task("t", finding(1), finding(2, "warning"))]))
    (entry,) = data["tasks"]
    assert entry["finding_counts"] == {"error": 1, "warning": 1, "note": 0}
    assert entry["findings"][0]["path"] == "src/a b.py"


def test_annotations_come_most_serious_first_ten_of_each_kind_by_default() -> None:
    notes = [finding(n, "note") for n in range(2)]
    errors = [finding(n) for n in range(11)]
    lines = finding_annotations([task("t", *notes, finding(1, "warning"), *errors)], Redactor())
    kinds = [line.split(" ", 1)[0] for line in lines[:-1]]
    assert kinds == ["::error"] * 10 + ["::warning"] + ["::notice"] * 2
    assert lines[10] == "::warning file=src/a b.py,line=2,endLine=2,title=Problem 1::message 1"
    assert lines[-1] == (
        "agent-runner: 1 more finding(s) not annotated (GitHub shows 10 of each kind per step);"
        " see findings.sarif and review.json"
    )
    assert not finding_annotations([task("t", *errors[:10])], Redactor())[-1].startswith("agent")


def test_the_step_summary_lists_the_first_50_findings_and_counts_the_rest() -> None:
    many = [finding(n, "warning" if n == 0 else "error") for n in range(51)]
    text = findings_table([task("t", *many)], REDACTOR)
    lines = text.splitlines()
    assert lines[0] == "### Findings: 50 error, 1 warning, 0 note"
    rows = [line for line in lines if line.startswith("| t |")]
    assert len(rows) == 50
    assert rows[0] == "| t | error | `src/a b.py:2` | Problem 1 |"
    assert all(" | error | " in row for row in rows)  # the warning comes 51st: left out
    assert text.endswith("\n1 more in findings.sarif.\n\n")
    none = findings_table([task("t")], REDACTOR)
    assert none == "### Findings: 0 error, 0 warning, 0 note\n\n"


def test_a_review_comment_spans_its_lines_and_pings_no_one() -> None:
    one = finding(1, message="cc @octocat and a@b.c; @ alone, @-dash", suggestion="x = 1")
    several = Finding("b.py", 3, 5, "note", "Wide", "m", "y = 2\n", "fpw")
    body = review_body([task("t", one, several)])
    assert body["body"] == "agent-runner review: 1 error, 0 warning, 1 note."
    first, second = body["comments"]
    assert first == {
        "path": "src/a b.py",
        "line": 2,
        "side": "RIGHT",
        "body": "**Problem 1** (error, t)\n\ncc @\u200boctocat and a@\u200bb.c; @ alone, @-dash"
        "\n\n```suggestion\nx = 1\n```",
    }
    assert second["line"] == 5 and second["start_line"] == 3 and second["start_side"] == "RIGHT"
    assert second["body"].endswith("```suggestion\ny = 2\n```")
    assert review_body([task("t")]) == {
        "event": "COMMENT",
        "body": "agent-runner: no findings.",
        "comments": [],
    }


def test_write_review_writes_the_masked_review_body(tmp_path: Path) -> None:
    summary = summary_of([task("t", finding(1, message=f"key {SECRET}"))])
    write_review(summary, tmp_path / "review.json", REDACTOR)
    written = json.loads((tmp_path / "review.json").read_text(encoding="utf-8"))
    assert written == REDACTOR.data(review_body(summary.outcomes))
    assert written["comments"][0]["body"].endswith("key ***")


def test_merged_reviews_count_their_comments_and_refuse_what_is_not_one(tmp_path: Path) -> None:
    from runner.report import merge_findings

    for shard, found in (("a", [finding(1)]), ("b", [finding(1), finding(2)]), ("c", [])):
        (tmp_path / shard).mkdir()
        (tmp_path / shard / "review.json").write_text(
            json.dumps(review_body([task("t", *found)])), encoding="utf-8"
        )
    inputs = [tmp_path / shard / "junit.xml" for shard in "abc"]
    merge_findings(inputs, tmp_path / "out" / "junit.xml")
    merged = json.loads((tmp_path / "out" / "review.json").read_text(encoding="utf-8"))
    assert merged["body"] == "agent-runner review: 2 comment(s)."
    assert len(merged["comments"]) == 2
    assert not (tmp_path / "out" / "findings.sarif").exists()  # no shard had one
    merge_reviews([tmp_path / "c" / "review.json"], tmp_path / "none.json")
    nothing = json.loads((tmp_path / "none.json").read_text(encoding="utf-8"))
    assert nothing == {"event": "COMMENT", "body": "no findings.", "comments": []}
    for text in ("{broken", '{"no": "comments"}', '{"comments": 3}'):
        (tmp_path / "bad.json").write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=r"^cannot read review body .*bad\.json: "):
            merge_reviews([tmp_path / "bad.json"], tmp_path / "never.json")
    assert not (tmp_path / "never.json").exists()


def test_no_finding_is_annotated_as_an_error_when_the_run_used_up_the_errors() -> None:
    found = [finding(1), finding(2, "warning")]
    lines = finding_annotations([task("t", *found)], Redactor(), errors_used=12)
    assert [line.split(" ", 1)[0] for line in lines] == ["::warning", "agent-runner:"]
    assert lines[-1].startswith("agent-runner: 1 more finding(s) not annotated")


def test_a_comment_in_two_reviews_is_merged_once_whatever_its_keys_order(tmp_path: Path) -> None:
    (comment,) = review_body([task("t", finding(1))])["comments"]
    reordered = dict(reversed(list(comment.items())))
    for name, kept in (("a", comment), ("b", reordered)):
        body = {"event": "COMMENT", "body": "", "comments": [kept]}
        (tmp_path / f"{name}.json").write_text(json.dumps(body), encoding="utf-8")
    merge_reviews([tmp_path / "a.json", tmp_path / "b.json"], tmp_path / "review.json")
    merged = json.loads((tmp_path / "review.json").read_text(encoding="utf-8"))
    assert merged["comments"] == [comment]
