"""Every closed choice of every command's flags, pinned value by value (DESIGN 2, 20): each
documented value is taken, and a value outside the set is a usage error (exit 2) that lists
the choices. Each flag that run and resume share is on both."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner.cli import build_parser, main

CHOICES = {
    "--log-level": ["debug", "info", "warning", "error"],
    "--output": ["text", "json"],
    "--sandbox": ["auto", "required", "off"],
    "--sandbox-backend": ["auto", "bwrap", "landlock", "none"],
    "--tool-mode": ["xml", "native", "auto"],
    "--fail-on": ["error", "warning", "note", "never"],
}
"""The flags `run` and `resume` share, and their values."""
RUN_ONLY = {"--isolation": ["none", "worktree"]}
LIST = {
    "--tool-mode": ["xml", "native", "auto"],
    "--sandbox": ["auto", "required", "off"],
    "--isolation": ["none", "worktree"],
    "--output": ["text", "json"],
    "--log-level": ["debug", "info", "warning", "error"],
}
OTHERS = {
    ("log", "export", "x.jsonl", "--format"): ["json", "markdown", "html"],
    ("report", "merge", "x.xml", "-o", "o.xml", "--dedupe"): ["none", "latest"],
}


def _cases() -> list[tuple[tuple[str, ...], str, str]]:
    found = []
    for command in (("run", "t.yaml"), ("resume", "x.jsonl")):
        for flag, values in CHOICES.items():
            found += [((*command, flag), flag, value) for value in values]
    for flag, values in RUN_ONLY.items():
        found += [(("run", "t.yaml", flag), flag, value) for value in values]
    for flag, values in LIST.items():
        found += [(("list", "t.yaml", flag), flag, value) for value in values]
    for words, values in OTHERS.items():
        found += [(words, words[-1], value) for value in values]
    return found


@pytest.mark.parametrize(("words", "flag", "value"), _cases())
def test_every_documented_value_of_a_closed_flag_is_taken(
    words: tuple[str, ...], flag: str, value: str
) -> None:
    args = build_parser().parse_args([*words, value])
    assert getattr(args, flag.lstrip("-").replace("-", "_")) == value


@pytest.mark.parametrize(("words", "flag", "value"), _cases()[::4])
def test_a_value_outside_a_closed_flags_set_is_a_usage_error(
    words: tuple[str, ...], flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([*words, value + "x"])
    assert stopped.value.code == 2
    assert f"invalid choice: '{value}x'" in capsys.readouterr().err


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in this process; assert it exits 2 and return what it said on stderr."""
    assert main(list(argv)) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("flags", [("--events", "-"), ("--output", "json")])
def test_either_stdout_flag_alone_is_taken(
    capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]
) -> None:
    """Only the two together are refused: alone, the run goes on to the next check."""
    said = _usage_error(
        capsys, "run", "-p", "hi", "--model", "openai:x", *flags, "--max-turns", "0"
    )
    assert "--max-turns 0" in said and "both write to stdout" not in said


@pytest.mark.parametrize("pair", ["=v", " =v", "k", ""])
def test_a_param_without_a_key_or_an_equals_sign_is_refused(
    capsys: pytest.CaptureFixture[str], pair: str
) -> None:
    said = _usage_error(capsys, "run", "-p", "hi", "--model", "openai:x", "--param", pair)
    assert f"--param {pair!r}: write it as KEY=VALUE" in said


@pytest.mark.parametrize("flag", ["--workdir", "--name"])
def test_workdir_and_name_each_go_only_with_a_prompt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    said = _usage_error(capsys, "run", str(tmp_path / "t.yaml"), flag, "x")
    assert "--workdir and --name go with -p" in said


def test_the_name_given_names_the_prompts_task(capsys: pytest.CaptureFixture[str]) -> None:
    said = _usage_error(capsys, "run", "-p", "hi", "--model", "openai:x", "--name", "a b")
    assert "--name 'a b'" in said


def test_resume_takes_logs_without_latest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    said = _usage_error(capsys, "resume", str(tmp_path / "gone.jsonl"))
    assert "--latest or logs" not in said and "or pass --latest" not in said


def test_the_flags_defaults_are_the_documented_ones(tmp_path: Path) -> None:
    args = build_parser().parse_args(["run", str(tmp_path / "t.yaml")])
    assert (args.min_pass_rate, args.output, args.events) == (1.0, "text", None)
    assert (args.allow_tool, args.deny_tool, args.param) == ([], [], [])


def test_a_prompt_over_one_mebibyte_is_refused_and_one_at_it_taken(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    limit = 1024 * 1024
    over, at = tmp_path / "over.md", tmp_path / "at.md"
    over.write_bytes(b"x" * (limit + 1))
    at.write_bytes(b"x" * limit)
    said = _usage_error(capsys, "run", "--prompt-file", str(over))
    assert f"the prompt is over {limit} bytes" in said
    said = _usage_error(capsys, "run", "--prompt-file", str(at), "--max-turns", "0")
    assert "--max-turns 0" in said


def test_a_prompt_runs_in_the_workdir_given_else_here(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each reaches the task: a missing --workdir is named; without one, the workdir is here,
    which the --out's repository must hold."""
    run = ("run", "-p", "hi", "--model", "openai:x")
    said = _usage_error(capsys, *run, "--workdir", str(tmp_path / "missing"))
    assert f"--workdir {tmp_path / 'missing'}: no such folder" in said
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    said = _usage_error(capsys, *run, "--out", str(repo / "out"))
    assert "pass an --out inside the workdir's repository" in said


def test_resume_latest_alone_looks_for_the_latest_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    said = _usage_error(capsys, "resume", "--latest", "--out", str(tmp_path / "none"))
    assert "--latest or logs" not in said and "or pass --latest" not in said
