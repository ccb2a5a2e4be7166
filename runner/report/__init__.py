"""Reports (DESIGN section 9): the JSON run summary and exit code, console lines, and GitHub
Actions output (step summary, annotations, groups, outputs, masks); the findings of review tasks
as SARIF (`sarif`), annotations, a step summary table and a pull-request review body (`findings`).

JUnit XML lives in `runner.report.junit`, outside this face: it imports junit_xml and
ElementTree, which a run needs only once its tasks have finished. Nothing here reads the
environment; callers pass it in.
"""

from __future__ import annotations

from runner.report.console import (
    check_output_block,
    final_table,
    rubric_block,
    task_finished_line,
    task_started_line,
)
from runner.report.findings import (
    finding_annotations,
    finding_counts,
    findings_table,
    merge_findings,
    write_review,
)
from runner.report.github import (
    GitHubActions,
    add_mask_lines,
    config_error_annotations,
    error_annotation,
    group_end,
    group_start,
    write_outputs,
    write_step_summary,
    write_usage_error,
)
from runner.report.merge import merge_reports
from runner.report.repeats import (
    MAX_REPEAT,
    Verdict,
    pass_at_k,
    pass_hat_k,
    verdict_lost,
    verdicts,
)
from runner.report.results import (
    result_file_name,
    result_text,
    write_result_file,
    write_results,
)
from runner.report.sarif import write_sarif
from runner.report.summary import (
    EXIT_CODE_MEANINGS,
    SUMMARY_VERSION,
    exit_code_of,
    format_cost,
    format_duration,
    format_tokens,
    merge_summaries,
    summary_json,
    summary_text,
    write_summary_json,
)

__all__ = [
    "EXIT_CODE_MEANINGS",
    "MAX_REPEAT",
    "SUMMARY_VERSION",
    "GitHubActions",
    "Verdict",
    "add_mask_lines",
    "config_error_annotations",
    "check_output_block",
    "rubric_block",
    "error_annotation",
    "exit_code_of",
    "final_table",
    "finding_annotations",
    "finding_counts",
    "findings_table",
    "format_cost",
    "format_duration",
    "format_tokens",
    "group_end",
    "group_start",
    "merge_findings",
    "merge_reports",
    "merge_summaries",
    "pass_at_k",
    "pass_hat_k",
    "result_file_name",
    "summary_json",
    "summary_text",
    "task_finished_line",
    "task_started_line",
    "verdict_lost",
    "verdicts",
    "write_outputs",
    "result_text",
    "write_result_file",
    "write_results",
    "write_review",
    "write_sarif",
    "write_step_summary",
    "write_summary_json",
    "write_usage_error",
]
