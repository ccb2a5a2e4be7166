"""On GitHub Actions: step summary, outputs, annotations and masks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import API_KEY, NO_WORKSPACE, Done, Scenario, complete, run_one

SUITE = {
    "defaults": {**NO_WORKSPACE, "workdir": "w"},
    "tasks": [
        {"name": "good", "prompt": "Say ok."},
        {"name": "bad", "prompt": "Say 42.", "success": {"expect": {"regex": "^42$"}}},
    ],
}


@pytest.fixture(scope="module")
def run(module_dir: Path) -> Done:
    scenario = Scenario(
        task=SUITE,
        steps=[complete("ok"), complete("41")],
        env={
            "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": str(module_dir / "step_summary.md"),
            "GITHUB_OUTPUT": str(module_dir / "github_output.txt"),
        },
    )
    return run_one(scenario, module_dir)


def test_the_step_summary_has_a_row_per_task(run: Done) -> None:
    assert run.code == 1, run.explain()
    summary = (run.root.parent / "step_summary.md").read_text(encoding="utf-8")
    assert "|" in summary
    rows = [line for line in summary.splitlines() if line.startswith("|")]
    assert any("good" in row and "passed" in row for row in rows), summary
    assert any("bad" in row and "failed" in row for row in rows), summary


def test_github_outputs_carry_counts_cost_junit_and_out_dir(run: Done) -> None:
    text = (run.root.parent / "github_output.txt").read_text(encoding="utf-8")
    assert "passed=1" in text.splitlines()
    assert "failed=1" in text.splitlines()
    for name in ("cost", "junit", "out"):
        assert f"{name}=" in text or f"{name}<<" in text, text
    assert "junit.xml" in text


def test_a_failed_task_gets_an_error_annotation_at_its_task_file(run: Done) -> None:
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1, run.stdout
    assert "file=" in errors[0] and "t.yaml" in errors[0] and "bad" in errors[0]


def test_every_secret_is_masked_before_anything_else_is_printed(run: Done) -> None:
    lines = run.stdout.splitlines()
    assert f"::add-mask::{API_KEY}" in lines
    assert lines.index(f"::add-mask::{API_KEY}") < min(
        i for i, line in enumerate(lines) if not line.startswith("::add-mask::")
    )


def test_each_task_is_grouped_in_the_log(run: Done) -> None:
    assert sum(line.startswith("::group::") for line in run.stdout.splitlines()) == 2
