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
