"""`agent-runner report merge`: the reports of shards (and of a shard's re-runs) joined into one.

Each kind of input is one step of `merge_reports`: JUnit always, the findings beside the JUnit
files (`findings.sarif`, `review.json`), `summary.json` with `--summary`. A new kind is one more
step; one that reads its files into `runner.report.dedupe.Source`s finds duplicates and keeps or
leaves them out the same way (the findings do not yet: see `runner.report.findings`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from runner.errors import ExitCode
from runner.report.dedupe import Dedupe
from runner.report.findings import merge_findings
from runner.report.summary import merge_summaries

__all__ = ["merge_reports"]


def merge_reports(
    junit: list[Path],
    output: Path,
    summaries: list[Path] | None = None,
    summary_output: Path | None = None,
    dedupe: Dedupe = "none",
) -> int:
    """Merge the JUnit files into `output` and the summaries (if any) into `summary_output`
    (default: summary.json beside `output`); print each warning about duplicates to stderr.
    Raises ConfigError naming a missing or malformed input."""
    from runner.report.junit import junit_run_id, merge_junit  # junit_xml: only here

    warnings = merge_junit(junit, output, dedupe)
    if dedupe == "latest":
        # The findings keep the last input's run of a task: order the inputs oldest run first
        # (run ids begin with the UTC start time), so the last is the newest, as above.
        junit = sorted(junit, key=junit_run_id)
    merge_findings(junit, output)  # DESIGN 21: the SARIF and review bodies beside
    if summaries:
        target = summary_output or output.with_name("summary.json")
        warnings += merge_summaries(summaries, target, junit=output, dedupe=dedupe)
    for line in warnings:
        print(f"agent-runner: {line}", file=sys.stderr)
    return ExitCode.OK
