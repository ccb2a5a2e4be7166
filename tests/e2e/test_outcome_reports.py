"""What the reports say about an outcome (DESIGN 12): a failed check's output, structured results,
the step summary's code spans, and what the prompt tells the agent about its budget and check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import NO_WORKSPACE, Done, Scenario, complete, run_all

SECRET = "tok-0123456789abcdef"
CAUSE = "AssertionError: expected 3, got 4"
# Noise first, the cause last: the reports keep the end of the output, where errors are.
FAILING_CHECK = f"seq 1 2000; echo '{CAUSE}'; echo 'token {SECRET}'; exit 1"
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "integer"}, "note": {"type": "string"}},
}
GITHUB = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT")


def on_github(root_name: str, base: Path) -> dict[str, str]:
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(base / f"{root_name}-step-summary.md"),
        "GITHUB_OUTPUT": str(base / f"{root_name}-output.txt"),
    }


def scenarios(base: Path) -> dict[str, Scenario]:
    secret_env = {"extensions": {"workspace": {"envs": {"API_TOKEN": SECRET}}}}
    return {
        "check_failed": Scenario(
            task={**secret_env, "success": {"check": FAILING_CHECK}},
            steps=[complete("done")],
            env=on_github("check_failed", base),
        ),
        "code_span": Scenario(
            task={**NO_WORKSPACE, "success": {"check": "echo x > /dev/null; exit 1"}},
            steps=[complete("done")],
            env=on_github("code_span", base),
        ),
        "structured": Scenario(
            task={**NO_WORKSPACE, "success": {"expect": {"json_schema": ANSWER_SCHEMA}}},
            steps=[complete('```json\n{"answer": 42, "note": "a > b"}\n```')],
            env=on_github("structured", base),
        ),
        "structured_failed": Scenario(
            task={
                **NO_WORKSPACE,
                "success": {"expect": {"json_schema": ANSWER_SCHEMA}, "check": "exit 1"},
            },
            steps=[complete('{"answer": 42}')],
            env=on_github("structured_failed", base),
        ),
        "told": Scenario(
            task={
                **secret_env,
                "limits": {"max_turns": 7},
                "success": {"check": f"test -n '{SECRET}' && pytest -q", "retries": 1},
            },
            steps=[complete("done"), complete("done")],
        ),
    }


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(scenarios(module_dir), module_dir)


def read(base: Path, name: str) -> str:
    return (base / name).read_text(encoding="utf-8")


def test_a_failed_checks_output_reaches_junit_summary_console_and_step_summary(
    runs: dict[str, Done],
) -> None:
    done = runs["check_failed"]
    assert done.code == 1, done.explain()
    failure = done.testcase().find("failure")
    assert failure is not None and failure.get("type") == "check"
    body = failure.text or ""
    assert CAUSE in body and "2000" in body
    assert "\n1\n" not in body, "the start of a long output is cut; its end is kept"
    output = done.task()["check_output"]
    assert CAUSE in output and len(output) < 4200
    assert CAUSE in done.stdout
    step_summary = read(done.root.parent, "check_failed-step-summary.md")
    assert CAUSE in step_summary and "<details>" in step_summary


def test_a_secret_in_the_checks_output_is_masked_everywhere(runs: dict[str, Done]) -> None:
    done = runs["check_failed"]
    # `::add-mask::` hands the secret to GitHub so that GitHub masks it: the one place it belongs.
    console = [
        line for line in (done.stdout + done.stderr).splitlines() if "::add-mask::" not in line
    ]
    texts = {
        "junit": read(done.out, "junit.xml"),
        "summary": read(done.out, "summary.json"),
        "console": "\n".join(console),
        "step summary": read(done.root.parent, "check_failed-step-summary.md"),
    }
    for where, text in texts.items():
        assert SECRET not in text, where
        assert "token ***" in text, where


def test_code_spans_in_the_step_summary_show_gt_as_written(runs: dict[str, Done]) -> None:
    done = runs["code_span"]
    assert done.code == 1, done.explain()
    step_summary = read(done.root.parent, "code_span-step-summary.md")
    assert "`echo x > /dev/null; exit 1`" in step_summary
    assert "&gt;" not in step_summary


def test_a_result_valid_against_the_json_schema_is_a_structured_result(
    runs: dict[str, Done],
) -> None:
    done = runs["structured"]
    assert done.code == 0, done.explain()
    expected = {"answer": 42, "note": "a > b"}
    assert json.loads(read(done.out / "results", "t.json")) == expected
    assert done.task()["structured_result"] == expected
    outputs = read(done.root.parent, "structured-output.txt").splitlines()
    assert 'result={"answer":42,"note":"a > b"}' in outputs


def test_a_task_that_failed_has_no_structured_result(runs: dict[str, Done]) -> None:
    done = runs["structured_failed"]
    assert done.code == 1, done.explain()
    assert done.task()["structured_result"] is None
    assert not (done.out / "results" / "t.json").exists()
    assert "result=" in read(done.root.parent, "structured_failed-output.txt").splitlines()


def test_the_prompt_tells_the_agent_its_turns_and_its_check_with_secrets_masked(
    runs: dict[str, Done],
) -> None:
    done = runs["told"]
    system = done.requests[0].body["messages"][0]
    assert system["role"] == "system"
    text = system["content"]
    assert "# BUDGET AND CHECK" in text
    assert "at most 7 turns" in text
    assert "test -n '***' && pytest -q" in text
    assert "1 more attempt(s)" in text
    assert SECRET not in text
