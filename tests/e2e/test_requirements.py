"""`success.require` through the CLI: silent success becomes a `requirement` failure (DESIGN 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git
from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    complete,
    prepare,
    run_all,
    start,
    tool_reply,
)


def require(**keys: object) -> dict[str, object]:
    return {"success": {"require": keys}}


SCENARIOS = {
    "too_few_calls": Scenario(
        task=require(min_tool_calls=2),
        files={"a.txt": "a\n"},
        steps=[tool_reply("read_file", path="a.txt"), complete("done")],
    ),
    "denied_calls_do_not_count": Scenario(
        task={**require(min_tool_calls=1), "tools": {"deny": ["execute_command"]}},
        steps=[tool_reply("execute_command", command="true"), complete("done")],
    ),
    "enough_calls": Scenario(
        task=require(min_tool_calls=2),
        files={"a.txt": "a\n"},
        steps=[
            tool_reply("read_file", path="a.txt"),
            tool_reply("list_files", path="."),
            complete("done"),
        ],
    ),
    "denied_call": Scenario(
        task={
            **require(no_denied_calls=True),
            "tools": {"deny": ["execute_command"]},
            # A requirement miss is final: the check's retries do not apply to it.
            "success": {"require": {"no_denied_calls": True}, "retries": 2},
        },
        steps=[tool_reply("execute_command", command="true"), complete("done")],
    ),
    "no_denied_call": Scenario(
        task={**require(no_denied_calls=True), "tools": {"deny": ["execute_command"]}},
        files={"a.txt": "a\n"},
        steps=[tool_reply("read_file", path="a.txt"), complete("done")],
    ),
    "outside_git": Scenario(
        task={**NO_WORKSPACE, **require(changed_files=True)},
        args=["validate", "t.yaml"],
    ),
    "typo": Scenario(
        task={**NO_WORKSPACE, **require(min_tool_call=2)},
        args=["validate", "t.yaml"],
    ),
    "bad_value": Scenario(
        task={**NO_WORKSPACE, **require(min_tool_calls=0)},
        args=["validate", "t.yaml"],
    ),
}

GIT_SCENARIOS = {
    "unchanged": Scenario(
        task=require(changed_files=True),
        files={"a.txt": "a\n"},
        steps=[tool_reply("read_file", path="a.txt"), complete("nothing to change")],
    ),
    "changed": Scenario(
        task=require(changed_files=True),
        files={"a.txt": "a\n"},
        steps=[tool_reply("write_to_file", path="new.txt", content="new"), complete("added")],
    ),
    "dirty_file_changed_again": Scenario(
        # a.txt is already modified before the run: its status line stays ` M`, its content not.
        task=require(changed_files=True),
        files={"a.txt": "a\n"},
        steps=[tool_reply("write_to_file", path="a.txt", content="third"), complete("edited")],
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


@pytest.fixture(scope="module")
def git_runs(module_dir: Path) -> dict[str, Done]:
    started = {}
    for name, scenario in GIT_SCENARIOS.items():
        root = module_dir / "git" / name
        prepare(scenario, root)
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "start")
        if name == "dirty_file_changed_again":
            (root / "w" / "a.txt").write_text("second\n", encoding="utf-8")
        started[name] = start(scenario, root)
    try:
        return {name: run.wait() for name, run in started.items()}
    finally:
        for run in started.values():
            run.server.stop()


def assert_requirement_failure(done: Done, needle: str) -> None:
    assert done.code == 1, done.explain()
    entry = done.task()
    assert (entry["status"], entry["kind"]) == ("failed", "requirement"), entry
    assert needle in entry["reason"], entry
    failure = done.testcase().find("failure")
    assert failure is not None and failure.get("type") == "requirement"
    assert needle in (failure.get("message") or "")


def test_too_few_tool_calls_fail_the_task_as_a_requirement(runs: dict[str, Done]) -> None:
    assert_requirement_failure(runs["too_few_calls"], "min_tool_calls")
    assert "made 1 tool call(s)" in runs["too_few_calls"].task()["reason"]


def test_a_denied_call_does_not_count_towards_min_tool_calls(runs: dict[str, Done]) -> None:
    assert_requirement_failure(runs["denied_calls_do_not_count"], "min_tool_calls")


def test_enough_tool_calls_pass(runs: dict[str, Done]) -> None:
    assert runs["enough_calls"].code == 0, runs["enough_calls"].explain()


def test_a_denied_call_fails_no_denied_calls_without_a_retry(runs: dict[str, Done]) -> None:
    done = runs["denied_call"]
    assert_requirement_failure(done, "no_denied_calls")
    assert len(done.requests) == 2


def test_no_denied_call_passes(runs: dict[str, Done]) -> None:
    assert runs["no_denied_call"].code == 0, runs["no_denied_call"].explain()


def test_changed_files_outside_a_git_repository_is_a_configuration_error(
    runs: dict[str, Done],
) -> None:
    done = runs["outside_git"]
    assert done.code == 2, done.explain()
    assert "t.yaml:" in done.stderr and "success.require.changed_files" in done.stderr
    assert "not inside a git repository" in done.stderr


def test_a_mistyped_require_key_names_file_line_and_the_right_key(runs: dict[str, Done]) -> None:
    done = runs["typo"]
    assert done.code == 2, done.explain()
    assert "t.yaml:" in done.stderr and "min_tool_call" in done.stderr
    assert "did you mean 'min_tool_calls'" in done.stderr


def test_min_tool_calls_must_be_positive(runs: dict[str, Done]) -> None:
    done = runs["bad_value"]
    assert done.code == 2, done.explain()
    assert "success.require.min_tool_calls" in done.stderr


def test_a_task_that_changed_nothing_fails_changed_files(git_runs: dict[str, Done]) -> None:
    assert_requirement_failure(git_runs["unchanged"], "changed_files")


def test_a_new_file_satisfies_changed_files(git_runs: dict[str, Done]) -> None:
    assert git_runs["changed"].code == 0, git_runs["changed"].explain()


def test_editing_an_already_modified_file_counts_as_a_change(git_runs: dict[str, Done]) -> None:
    done = git_runs["dirty_file_changed_again"]
    assert done.code == 0, done.explain()


def test_the_prompt_names_the_requirements(runs: dict[str, Done]) -> None:
    system = runs["enough_calls"].requests[0].body["messages"][0]["content"]
    assert "at least 2 tool call(s)" in system
