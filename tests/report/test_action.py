"""The action's glue (runner/report/action.py): inputs into the runner's arguments, the
artifact's default name, and bad inputs answered as configuration errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.report.action import artifact_name, command_line, main, split_words


def test_words_split_like_a_shell_without_expanding_anything() -> None:
    text = "agent-tasks/**/*.yaml 'my tasks/a.yaml'\n--filter docs-* --param \"x=a b\" $HOME"
    assert split_words(text, "tasks") == [
        "agent-tasks/**/*.yaml",
        "my tasks/a.yaml",
        "--filter",
        "docs-*",
        "--param",
        "x=a b",
        "$HOME",
    ]


def test_an_unclosed_quote_is_a_configuration_error_naming_the_input() -> None:
    with pytest.raises(ConfigError, match=r"input `args`: No closing quotation"):
        split_words("--param 'x=a b", "args")


def test_the_command_line_puts_tasks_first_and_the_extra_args_last() -> None:
    env = {"TASKS": "a.yaml b/", "OUT": "runs", "JOBS": "2", "EXTRA": "--fail-fast", "MODEL": ""}
    assert command_line(env) == ["run", "a.yaml", "b/", "--jobs=2", "--out=runs", "--fail-fast"]


def test_neither_tasks_nor_prompt_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"`tasks`.*or `prompt`"):
        command_line({"TASKS": "  ", "PROMPT": ""})


@pytest.mark.parametrize("shard", ["1/2/3", "0/4", "5/4", "1/4'", "a/b", "1 /4"])
def test_a_malformed_shard_is_refused_before_it_names_anything(shard: str) -> None:
    with pytest.raises(ConfigError, match="input `shard`"):
        artifact_name({"SHARD": shard, "GITHUB_JOB": "run"})


def test_the_default_name_tells_matrix_jobs_calls_shards_and_attempts_apart(
    tmp_path: Path,
) -> None:
    env = {"GITHUB_JOB": "run", "GITHUB_RUN_ATTEMPT": "2", "RUNNER_TEMP": str(tmp_path)}
    first = artifact_name({**env, "MATRIX": json.dumps({"os": "ubuntu-latest", "py": "3.12"})})
    assert first == "agent-runs-run-ubuntu-latest-3.12-attempt-2"
    second = artifact_name({**env, "MATRIX": "null", "SHARD": "3/4"})
    assert second == "agent-runs-run-shard-3-of-4-call-2-attempt-2"


def test_matrix_values_are_cut_to_characters_an_artifact_name_takes() -> None:
    matrix = json.dumps({"include": [{"name": 'a/b:"c"*'}], "n": 1})
    assert artifact_name({"GITHUB_JOB": "j", "MATRIX": matrix}) == "agent-runs-j-a-b-c-1-attempt-1"


def test_a_given_artifact_name_upload_artifact_refuses_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="input `artifact-name`"):
        artifact_name({"NAME": "runs/1"})
    assert artifact_name({"NAME": "my-runs"}) == "my-runs"


def test_a_bad_input_writes_the_outputs_and_summary_of_a_configuration_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output, summary = tmp_path / "output", tmp_path / "summary"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "TASKS": "'unclosed",
    }
    assert main(env) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout carries arguments only
    assert "::error title=agent-runner input::input `tasks`" in captured.err
    lines = output.read_text(encoding="utf-8").splitlines()
    assert "exit-code=2" in lines and "artifact-name=agent-runs-job-attempt-1" in lines
    (result,) = [line.removeprefix("result=") for line in lines if line.startswith("result=")]
    assert "input `tasks`" in json.loads(result)["error"]
    assert "configuration error" in summary.read_text(encoding="utf-8")


def test_good_inputs_come_out_nul_separated(capsys: pytest.CaptureFixture[str]) -> None:
    assert main({"TASKS": "a.yaml", "EXTRA": "--param 'x=a b'"}) == 0
    assert capsys.readouterr().out.split("\0") == ["run", "a.yaml", "--param", "x=a b", ""]
