"""Structured results on disk and the step summary's markdown for code spans and check output."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from runner.report.github import step_summary_markdown
from runner.report.results import result_file_name, write_results
from tests.report.samples import REDACTOR, SECRET, outcome, summary_of


def test_a_plain_task_name_is_its_result_file_name() -> None:
    assert result_file_name("add-health_1.2") == "add-health_1.2.json"


def test_names_that_are_not_file_names_stay_inside_the_folder_and_apart() -> None:
    names = ["../../etc/passwd", "a/b", "a_b", ".hidden", "..", "", "ä"]
    files = [result_file_name(name) for name in names]
    assert all("/" not in f and not f.startswith(".") for f in files), files
    assert len(set(files)) == len(files), files


def test_write_results_writes_structured_results_redacted_and_drops_stale_ones(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "stale.json").write_text("{}", encoding="utf-8")
    good = dataclasses.replace(
        outcome("good", "passed"), structured_result={"answer": 42, "token": SECRET}
    )
    summary = summary_of([good, outcome("stale", "failed")])
    write_results(summary, folder, REDACTOR)
    assert json.loads((folder / "good.json").read_text(encoding="utf-8")) == {
        "answer": 42,
        "token": "***",
    }
    assert not (folder / "stale.json").exists()


def test_code_spans_keep_their_text_and_the_rest_is_escaped() -> None:
    bad = outcome(
        "bad",
        "failed",
        kind="check",
        reason="success check `a > b | c` exited with 1 <b>bold</b>",
    )
    text = step_summary_markdown(summary_of([bad]), REDACTOR, 1 << 20)
    assert "`a > b \\| c`" in text
    assert "&lt;b&gt;bold&lt;/b&gt;" in text


def test_a_failed_checks_output_is_folded_below_the_table_in_a_fence_it_cannot_close() -> None:
    bad = dataclasses.replace(
        outcome("bad", "failed", kind="check", reason="check failed"),
        check_output="line 1\n```\n<script>x</script> token " + SECRET,
    )
    text = step_summary_markdown(summary_of([bad]), REDACTOR, 1 << 20)
    assert "<details><summary>bad: check output (last part)</summary>" in text
    assert "````text\nline 1\n```\n<script>x</script> token ***\n````" in text
    assert SECRET not in text
