"""GitHub Actions: escaped workflow commands, outputs, masks, and a step summary under 1 MiB."""

from __future__ import annotations

import re
from pathlib import Path

from runner.errors import ExitCode
from runner.report.github import (
    STEP_SUMMARY_LIMIT,
    GitHubActions,
    add_mask_lines,
    error_annotation,
    escape_data,
    escape_property,
    group_end,
    group_start,
    step_summary_markdown,
    write_outputs,
    write_step_summary,
)
from tests.report.samples import REDACTOR, SECRET, mixed_outcomes, outcome, summary_of


def test_data_escaping_covers_percent_cr_and_lf() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"


def test_property_escaping_also_covers_colon_and_comma() -> None:
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_annotation_points_at_the_task_file_with_escaped_title_and_message() -> None:
    task = outcome(
        "build, then test",
        "failed",
        task_file="tasks/odd:name.yaml",
        kind="check",
        reason="50% of tests failed:\r\nFAILED test_a",
    )
    line = error_annotation(task, redactor=REDACTOR)
    assert line == (
        "::error file=tasks/odd%3Aname.yaml,title=build%2C then test%3A failed (check)"
        "::50%25 of tests failed:%0D%0AFAILED test_a"
    )
    assert "\n" not in line and "\r" not in line


def test_annotation_for_each_status_that_did_not_pass_and_none_for_a_pass() -> None:
    lines = {o.name: error_annotation(o, redactor=REDACTOR) for o in mixed_outcomes()}
    assert lines["health"] == ""
    for name in ("lint", "refactor", "deploy", "docs"):
        assert lines[name].startswith("::error file=tasks/suite.yaml,title=")
    assert "budget exceeded (cost)" in lines["refactor"]
    assert SECRET not in "".join(lines.values())


def test_group_lines() -> None:
    assert group_start("lint\ntranscript") == "::group::lint%0Atranscript"
    assert group_end() == "::endgroup::"


def test_mask_lines_one_per_secret_line_escaped() -> None:
    pem = "-----BEGIN KEY-----\nabc%def123\r\n-----END KEY-----"
    assert add_mask_lines([SECRET, pem, "", "ab"]) == [
        f"::add-mask::{SECRET}",
        "::add-mask::-----BEGIN KEY-----",
        "::add-mask::abc%25def123",
        "::add-mask::-----END KEY-----",
    ]


def read_outputs(path: Path) -> dict[str, str]:
    """Parse `$GITHUB_OUTPUT` as the runner does: `name=value` or `name<<DELIM ... DELIM`."""
    values: dict[str, str] = {}
    lines = iter(path.read_text(encoding="utf-8").split("\n"))
    for line in lines:
        if not line:
            continue
        if match := re.fullmatch(r"([\w-]+)<<(\S+)", line):
            name, delimiter = match.groups()
            body = []
            for part in lines:
                if part == delimiter:
                    break
                body.append(part)
            values[name] = "\n".join(body)
        else:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def test_outputs_give_passed_failed_cost_junit_and_out(tmp_path: Path) -> None:
    path = tmp_path / "output"
    path.write_text("earlier=1\n", encoding="utf-8")
    write_outputs(summary_of(mixed_outcomes()), path)
    assert read_outputs(path) == {
        "earlier": "1",
        "passed": "1",
        "failed": "4",
        "cost": "0.0500",
        "junit": "agent-runs/junit.xml",
        "out": "agent-runs",
        "exit-code": "130",
        "result": "",
    }


def test_output_with_a_newline_uses_the_delimiter_form(tmp_path: Path) -> None:
    summary = summary_of(mixed_outcomes())
    odd = type(summary)(**{**summary.__dict__, "out_dir": Path("runs\nsecond line")})
    path = tmp_path / "output"
    write_outputs(odd, path)
    text = path.read_text(encoding="utf-8")
    assert re.search(r"^out<<(ghadelimiter_[0-9a-f]{32})\nruns\nsecond line\n\1$", text, re.M)
    assert read_outputs(path)["out"] == "runs\nsecond line"


def test_step_summary_is_a_redacted_markdown_table(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    write_step_summary(summary_of(mixed_outcomes()), path, REDACTOR)
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert "| Task | Status | Turns | Tokens | Cost | Time | Reason |" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    # Header, five tasks (those that did not pass first), totals.
    assert len(rows) == 7
    assert "deploy" in rows[1] and "health" in rows[5]
    assert "**Total (5)**" in rows[6]
    assert "exit code 130 (interrupted by SIGINT)" in text


def test_step_summary_cells_cannot_break_the_table() -> None:
    task = outcome("pipe|name", "failed", reason="a | b\nc <script>x</script>")
    text = step_summary_markdown(summary_of([task]), REDACTOR, STEP_SUMMARY_LIMIT)
    row = next(line for line in text.splitlines() if "pipe" in line)
    assert "pipe\\|name" in row
    assert "a \\| b c &lt;script&gt;x&lt;/script&gt;" in row


def test_step_summary_of_ten_thousand_tasks_stays_under_1_mib(tmp_path: Path) -> None:
    outcomes = [
        outcome(
            f"task-{i:05d}",
            "failed" if i % 2 == 0 else "passed",
            kind="check",
            reason="x" * 300,
        )
        for i in range(10_000)
    ]
    path = tmp_path / "summary.md"
    path.write_text("# earlier step content\n" * 1000, encoding="utf-8")
    write_step_summary(summary_of(outcomes, exit_code=ExitCode.FAILED), path, REDACTOR)
    size = path.stat().st_size
    assert size <= STEP_SUMMARY_LIMIT
    text = path.read_text(encoding="utf-8")
    assert re.search(r"\n\d+ of 10000 tasks are not shown", text)
    assert "**Total (10000)**" in text
    # Failures take the room first; passes are the rows left out.
    shown = re.findall(r"^\| task-\d+ \| (\S+)", text, re.M)
    assert 1000 < len(shown) < 5000
    assert set(shown) == {"❌"}


def test_step_summary_with_no_room_left_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_bytes(b"x" * (STEP_SUMMARY_LIMIT - 10))
    write_step_summary(summary_of(mixed_outcomes()), path, REDACTOR)
    assert path.stat().st_size == STEP_SUMMARY_LIMIT - 10


def test_environment_decides_whether_github_reports_apply() -> None:
    assert GitHubActions.from_env({}) is None
    assert GitHubActions.from_env({"GITHUB_ACTIONS": "false"}) is None
    gh = GitHubActions.from_env(
        {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "/s.md", "GITHUB_OUTPUT": ""}
    )
    assert gh == GitHubActions(step_summary=Path("/s.md"), output=None)


def test_step_summary_lists_the_patches_of_worktree_tasks() -> None:
    from dataclasses import replace

    patched = replace(outcome("fix", "passed"), patch=Path("out/patches/fix.patch"))
    text = step_summary_markdown(
        summary_of([patched, outcome("plain", "passed")]), REDACTOR, STEP_SUMMARY_LIMIT
    )
    assert "Patches (`git apply` them on the commit the run started from):" in text
    assert "- fix: `out/patches/fix.patch`" in text.splitlines()
    assert "plain:" not in text
    without = step_summary_markdown(summary_of([outcome("p", "passed")]), REDACTOR, 100_000)
    assert "Patches" not in without
