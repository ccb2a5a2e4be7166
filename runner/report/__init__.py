"""Reports (DESIGN section 9): the JSON run summary and exit code, console lines, and GitHub
Actions output (step summary, annotations, groups, outputs, masks).

JUnit XML lives in `runner.report.junit`, outside this face: it imports junit_xml and
ElementTree, which a run needs only once its tasks have finished. Nothing here reads the
environment; callers pass it in.
"""

from __future__ import annotations

from runner.report.console import (
    check_output_block,
    final_table,
    task_finished_line,
    task_started_line,
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
from runner.report.results import result_file_name, write_result_file, write_results
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
    "SUMMARY_VERSION",
    "GitHubActions",
    "add_mask_lines",
    "config_error_annotations",
    "check_output_block",
    "error_annotation",
    "exit_code_of",
    "final_table",
    "format_cost",
    "format_duration",
    "format_tokens",
    "group_end",
    "group_start",
    "merge_reports",
    "merge_summaries",
    "result_file_name",
    "summary_json",
    "summary_text",
    "task_finished_line",
    "task_started_line",
    "write_outputs",
    "write_result_file",
    "write_results",
    "write_step_summary",
    "write_summary_json",
    "write_usage_error",
]
