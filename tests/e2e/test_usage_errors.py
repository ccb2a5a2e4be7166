"""Usage and configuration errors exit 2 before anything runs, and leave no JUnit behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import NO_WORKSPACE, Done, Scenario, complete, run_all

SCENARIOS = {
    "bad_task_file": Scenario(
        task="name: bad\nprompt: Do it.\nworkdir: w\nlimits: {max_turnz: 3}\n",
        default=complete(),
    ),
    "no_model": Scenario(
        task=NO_WORKSPACE, default=complete(), args=["run", "t.yaml", "--out", "OUT"]
    ),
    "unknown_provider": Scenario(
        task=NO_WORKSPACE,
        default=complete(),
        args=["run", "t.yaml", "--model", "nosuch:model-1", "--out", "OUT"],
    ),
    "deny_typo": Scenario(task={"tools": {"deny": ["exec_command"]}}, default=complete()),
    "validate_model_typo": Scenario(
        task={"model": "opnai:gpt-4.1"}, default=complete(), args=["validate", "t.yaml"]
    ),
    "run_model_typo": Scenario(
        task={"model": "opnai:gpt-4.1"}, default=complete(), args=["run", "t.yaml", "--out", "OUT"]
    ),
    "config_extension_key": Scenario(
        task={
            "tasks": [
                {"name": "a", "prompt": "x", "workdir": "w"},
                {"name": "b", "prompt": "y", "workdir": "w"},
            ]
        },
        extra_files={"agent-runner.yaml": "jobs: 1\nextensions:\n  workspace:\n    tymeout: 5\n"},
        default=complete(),
    ),
    "config_top_key": Scenario(
        task={}, extra_files={"agent-runner.yaml": "jobs: 1\ntymeout: 5\n"}, default=complete()
    ),
    "type_errors": Scenario(
        task={"limits": 5, "params": {"a": {"b": 1}}},
        default=complete(),
        args=["validate", "t.yaml"],
    ),
    "workdir_is_a_file": Scenario(
        task="prompt: hi\nworkdir: w/f.txt\n", files={"f.txt": "x"}, default=complete()
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_usage_error_exits_2_without_calling_the_model_or_writing_junit(
    runs: dict[str, Done], name: str
) -> None:
    done = runs[name]
    assert done.code == 2, done.explain()
    assert done.requests == []
    assert not (done.out / "junit.xml").exists()
    assert "Traceback" not in done.stderr


def test_a_bad_task_file_error_names_the_file_line_and_key(runs: dict[str, Done]) -> None:
    stderr = runs["bad_task_file"].stderr
    assert "t.yaml:4" in stderr and "max_turnz" in stderr


def test_a_missing_model_says_how_to_give_one(runs: dict[str, Done]) -> None:
    assert "--model" in runs["no_model"].stderr


def test_an_unknown_provider_lists_the_known_ones(runs: dict[str, Done]) -> None:
    stderr = runs["unknown_provider"].stderr
    assert "nosuch" in stderr and "openai" in stderr and "replay" in stderr


def test_a_tools_glob_that_matches_no_tool_is_an_error_with_a_suggestion(
    runs: dict[str, Done],
) -> None:
    stderr = runs["deny_typo"].stderr
    assert "t.yaml:" in stderr and "tools.deny[0]" in stderr, stderr
    assert "did you mean 'execute_command'?" in stderr


@pytest.mark.parametrize("name", ["validate_model_typo", "run_model_typo"])
def test_validate_and_run_reject_a_misspelt_provider_at_its_line(
    runs: dict[str, Done], name: str
) -> None:
    stderr = runs[name].stderr
    assert "t.yaml:4:1: model: unknown model provider 'opnai'" in stderr, stderr
    assert "did you mean openai:gpt-4.1?" in stderr


def test_an_unknown_config_key_is_blamed_on_the_config_file_once(runs: dict[str, Done]) -> None:
    stderr = runs["config_extension_key"].stderr
    assert "agent-runner.yaml:4:5: extensions.workspace.tymeout: unknown key" in stderr, stderr
    assert "did you mean 'timeout'?" in stderr
    assert stderr.count("tymeout") == 1 and "t.yaml" not in stderr


def test_an_unknown_top_level_config_key_has_its_file_and_line(runs: dict[str, Done]) -> None:
    assert "agent-runner.yaml:2:1: setting tymeout" in runs["config_top_key"].stderr


def test_type_errors_are_plain_and_one_per_value(runs: dict[str, Done]) -> None:
    stderr = runs["type_errors"].stderr
    assert "instance of" not in stderr and "Limits" not in stderr, stderr
    assert "limits: expected a mapping" in stderr
    assert [line for line in stderr.splitlines() if "params.a" in line] == [
        next(line for line in stderr.splitlines() if "params.a" in line)
    ]
    assert "2 problem(s) found" in stderr


def test_a_workdir_that_is_a_file_says_so(runs: dict[str, Done]) -> None:
    stderr = runs["workdir_is_a_file"].stderr
    assert "is a file, not a folder" in stderr and "does not exist" not in stderr, stderr
