"""`<out>/findings.sarif` (DESIGN 21): the tasks' findings as SARIF 2.1.0, one run per task, which
GitHub code scanning, GitLab and most CI dashboards read; and the merge of shards' files.

Rules come from the titles (the id is a slug of the title and a hash of it, so the same title gets
the same id in every run); locations are relative to the repository root (`%SRCROOT%`);
`partialFingerprints` carry the finding's hash of its rule, path and lines, so code scanning
tracks one finding across runs and commits even when lines move.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from runner.atomic import write_text_atomic
from runner.errors import ConfigError
from runner.outcome import Finding, RunSummary, TaskOutcome
from runner.redact import Redactor

__all__ = [
    "FINGERPRINT_KEY",
    "SARIF_FILE",
    "merge_sarif",
    "rule_id",
    "sarif_document",
    "write_sarif",
]

SARIF_FILE = "findings.sarif"
"""Its name in the artifacts folder."""
FINGERPRINT_KEY = "agentRunnerFinding/v1"
"""The `partialFingerprints` key: versioned, so a new way of hashing does not match old ones."""
_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SLUG = re.compile(r"[^a-z0-9]+")


def rule_id(title: str) -> str:
    """A stable rule id for a title: `unused-import-3f2a9c` (the same in every run)."""
    key = " ".join(title.lower().split())
    slug = _SLUG.sub("-", key).strip("-")[:48] or "finding"
    return f"{slug}-{hashlib.sha256(key.encode()).hexdigest()[:6]}"


def _location(finding: Finding) -> dict[str, Any]:
    return {
        "uri": quote(finding.path),
        "uriBaseId": "%SRCROOT%",
    }


def _result(finding: Finding, rules: dict[str, int], occurrence: int) -> dict[str, Any]:
    rid = rule_id(finding.title)
    region = {"startLine": finding.line, "endLine": finding.end_line}
    result: dict[str, Any] = {
        "ruleId": rid,
        "ruleIndex": rules[rid],
        "level": finding.severity,
        "message": {"text": finding.message},
        "locations": [
            {"physicalLocation": {"artifactLocation": _location(finding), "region": region}}
        ],
        # As GitHub's own line hashes do: the same text found twice is told apart by its count.
        "partialFingerprints": {FINGERPRINT_KEY: f"{finding.fingerprint}:{occurrence}"},
    }
    if finding.suggestion is not None:
        replacement = {"deletedRegion": region, "insertedContent": {"text": finding.suggestion}}
        result["fixes"] = [
            {
                "description": {"text": "Suggested replacement for the lines"},
                "artifactChanges": [
                    {"artifactLocation": _location(finding), "replacements": [replacement]}
                ],
            }
        ]
    return result


def _run(outcome: TaskOutcome, version: str) -> dict[str, Any]:
    findings = outcome.findings or ()
    rules: dict[str, int] = {}
    described: list[dict[str, Any]] = []
    for finding in findings:
        rid = rule_id(finding.title)
        if rid not in rules:
            rules[rid] = len(described)
            described.append(
                {
                    "id": rid,
                    "name": finding.title,
                    "shortDescription": {"text": finding.title},
                    "defaultConfiguration": {"level": finding.severity},
                }
            )
    driver = {
        "name": "agent-runner",
        "version": version,
        "semanticVersion": version,
        "informationUri": "https://pypi.org/project/agent-runner-ci/",
        "rules": described,
    }
    return {
        "tool": {"driver": driver},
        # Code scanning keeps one set of alerts per category: one category per task.
        "automationDetails": {"id": f"agent-runner/{outcome.name}/"},
        "columnKind": "unicodeCodePoints",
        "results": [
            _result(f, rules, n) for f, n in zip(findings, _occurrences(findings), strict=True)
        ],
        "properties": {"task": outcome.name, "status": outcome.status},
    }


def _occurrences(findings: Sequence[Finding]) -> list[int]:
    """For each finding, how many before it share its fingerprint, plus one."""
    seen: dict[str, int] = {}
    counts = []
    for finding in findings:
        seen[finding.fingerprint] = seen.get(finding.fingerprint, 0) + 1
        counts.append(seen[finding.fingerprint])
    return counts


def sarif_document(outcomes: Sequence[TaskOutcome], version: str) -> dict[str, Any]:
    """The SARIF log of the tasks that asked for findings (not yet redacted)."""
    runs = [_run(o, version) for o in outcomes if o.findings is not None]
    return {"$schema": _SCHEMA, "version": "2.1.0", "runs": runs}


def write_sarif(summary: RunSummary, path: Path, redactor: Redactor) -> None:
    """Write `<out>/findings.sarif` when a task asked for findings; nothing otherwise."""
    if all(outcome.findings is None for outcome in summary.outcomes):
        return
    document = redactor.data(sarif_document(summary.outcomes, summary.runner_version))
    write_text_atomic(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read SARIF file {path}: {error}; pass a shard's file") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise ConfigError(f"{path} is not a SARIF log (no `runs` list)")
    return data


def merge_sarif(inputs: Iterable[Path], out: Path) -> int:
    """Merge shards' SARIF files into `out`: every run once (a task that ran in two shards keeps
    its last run), every result once (by fingerprint). Returns the number of runs written."""
    runs: dict[str, dict[str, Any]] = {}
    schema = _SCHEMA
    for path in inputs:
        data = _load(path)
        schema = str(data.get("$schema", schema))
        for run in data["runs"]:
            key = str(run.get("automationDetails", {}).get("id", len(runs)))
            runs[key] = _unique_results(run)
    document = {"$schema": schema, "version": "2.1.0", "runs": list(runs.values())}
    write_text_atomic(out, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return len(runs)


def _unique_results(run: dict[str, Any]) -> dict[str, Any]:
    seen: set[str] = set()
    results = []
    for result in run.get("results", []):
        key = json.dumps(result.get("partialFingerprints") or result, sort_keys=True)
        if key not in seen:
            seen.add(key)
            results.append(result)
    return {**run, "results": results}
