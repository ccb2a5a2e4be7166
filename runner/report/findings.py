"""Findings for people (DESIGN 21): GitHub annotations on the lines, a table in the step summary,
`<out>/review.json` (the body of GitHub's "create a review for a pull request" call, which a
workflow posts with `gh api`), counts for summary.json and JUnit, and the merge of shards' reviews.

Everything here came from the model: each text is masked, bounded and escaped for where it goes
(a workflow command's properties and data, a markdown table cell, a review comment).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from runner.atomic import write_text_atomic
from runner.errors import ConfigError
from runner.outcome import SEVERITIES, Finding, RunSummary, TaskOutcome, finding_counts
from runner.redact import Redactor
from runner.report.github import _cell, _code, escape_data, escape_property

__all__ = [
    "ANNOTATIONS_PER_LEVEL",
    "REVIEW_FILE",
    "finding_annotations",
    "finding_counts",
    "findings_table",
    "merge_findings",
    "merge_reviews",
    "review_body",
    "write_review",
]

REVIEW_FILE = "review.json"
ANNOTATIONS_PER_LEVEL = 10
"""GitHub shows at most 10 error, 10 warning and 10 notice annotations of one step."""
_COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}
_TABLE_ROWS = 50
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")


def _all(outcomes: Sequence[TaskOutcome]) -> list[tuple[TaskOutcome, Finding]]:
    found = [(o, f) for o in outcomes for f in (o.findings or ())]
    return sorted(found, key=lambda pair: SEVERITIES.index(pair[1].severity))


def finding_annotations(
    outcomes: Sequence[TaskOutcome], redactor: Redactor, errors_used: int = 0
) -> list[str]:
    """`::error|warning|notice file=,line=,endLine=,title=::message` lines, most serious first,
    within GitHub's per-step limits (`errors_used`: error annotations the run already printed),
    then one line counting the rest."""
    room = {level: ANNOTATIONS_PER_LEVEL for level in SEVERITIES}
    room["error"] = max(0, room["error"] - errors_used)
    lines: list[str] = []
    left_out = 0
    for _, finding in _all(outcomes):
        if room[finding.severity] <= 0:
            left_out += 1
            continue
        room[finding.severity] -= 1
        text = redactor.text
        properties = (
            f"file={escape_property(text(finding.path))},line={finding.line},"
            f"endLine={finding.end_line},title={escape_property(text(finding.title))}"
        )
        message = escape_data(text(finding.message))
        lines.append(f"::{_COMMANDS[finding.severity]} {properties}::{message}")
    if left_out:
        lines.append(
            f"agent-runner: {left_out} more finding(s) not annotated (GitHub shows "
            f"{ANNOTATIONS_PER_LEVEL} of each kind per step); see findings.sarif and review.json"
        )
    return lines


def findings_table(outcomes: Sequence[TaskOutcome], redactor: Redactor) -> str:
    """A markdown table of the findings for the step summary ("" when no task asked for them)."""
    if all(o.findings is None for o in outcomes):
        return ""
    found = _all(outcomes)
    counts = finding_counts(f for _, f in found)
    head = f"### Findings: {', '.join(f'{n} {level}' for level, n in counts.items())}\n\n"
    if not found:
        return head
    rows = [
        f"| {_cell(redactor.text(o.name), 80)} | {f.severity} | {_where(f, redactor)} | "
        f"{_cell(redactor.text(f.title))} |\n"
        for o, f in found[:_TABLE_ROWS]
    ]
    more = len(found) - len(rows)
    note = f"\n{more} more in findings.sarif.\n" if more else ""
    table = "| Task | Severity | Where | Finding |\n| --- | --- | --- | --- |\n"
    return head + table + "".join(rows) + note + "\n"


def _where(finding: Finding, redactor: Redactor) -> str:
    """`path:line` as a table cell's code span: GitHub splits a row at every `|` not escaped,
    inside a code span too."""
    return _code(redactor.text(f"{finding.path}:{finding.line}"), 200).replace("|", "\\|")


def _safe(text: str) -> str:
    """Model text for a review comment: no @mention pings anyone."""
    return _MENTION.sub("@\u200b", text)


def _comment(outcome: TaskOutcome, finding: Finding) -> dict[str, Any]:
    body = f"**{_cell(finding.title)}** ({finding.severity}, {_cell(outcome.name, 80)})\n\n"
    body += _safe(finding.message)
    if finding.suggestion is not None:
        runs = [len(run) for run in re.findall(r"`{3,}", finding.suggestion)]
        fence = "`" * max(3, max(runs, default=0) + 1)
        text = finding.suggestion  # "" deletes the lines
        text += "" if not text or text.endswith("\n") else "\n"
        body += f"\n\n{fence}suggestion\n{text}{fence}"
    comment: dict[str, Any] = {"path": finding.path, "line": finding.end_line, "side": "RIGHT"}
    if finding.end_line > finding.line:
        comment.update(start_line=finding.line, start_side="RIGHT")
    comment["body"] = body
    return comment


def review_body(outcomes: Sequence[TaskOutcome]) -> dict[str, Any]:
    """The request body of `POST /repos/{owner}/{repo}/pulls/{number}/reviews` (not redacted)."""
    found = _all(outcomes)
    counts = finding_counts(f for _, f in found)
    summary = ", ".join(f"{n} {level}" for level, n in counts.items())
    return {
        "event": "COMMENT",
        "body": f"agent-runner review: {summary}." if found else "agent-runner: no findings.",
        "comments": [_comment(o, f) for o, f in found],
    }


def write_review(summary: RunSummary, path: Path, redactor: Redactor) -> None:
    """Write `<out>/review.json` when a task asked for findings; nothing otherwise."""
    if all(outcome.findings is None for outcome in summary.outcomes):
        return
    body = redactor.data(review_body(summary.outcomes))
    write_text_atomic(path, json.dumps(body, indent=2, ensure_ascii=False) + "\n")


def merge_reviews(inputs: Iterable[Path], out: Path) -> None:
    """One review body from the shards': every comment once, the counts summed."""
    comments: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in inputs:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            shard = list(data["comments"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConfigError(f"cannot read review body {path}: {error!r}") from None
        for comment in shard:
            key = json.dumps(comment, sort_keys=True)
            if key not in seen:
                seen.add(key)
                comments.append(comment)
    body = f"agent-runner review: {len(comments)} comment(s)." if comments else "no findings."
    merged = {"event": "COMMENT", "body": body, "comments": comments}
    write_text_atomic(out, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")


def merge_findings(junit_inputs: Iterable[Path], junit_out: Path) -> None:
    """`report merge`: the findings.sarif and review.json beside each shard's JUnit file, merged
    beside the merged JUnit file; nothing when no shard has them."""
    from runner.report.sarif import SARIF_FILE, merge_sarif

    folders = [path.parent for path in junit_inputs]
    for name, merge in ((SARIF_FILE, merge_sarif), (REVIEW_FILE, merge_reviews)):
        found = [folder / name for folder in folders if (folder / name).is_file()]
        if found:
            merge(found, junit_out.with_name(name))
