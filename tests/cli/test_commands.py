"""`list`, "did you mean" and the usage errors of DESIGN 20's flags, through the CLI: none of
these starts a model or a server, so each process is quick."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from runner.run.plan import select_tasks
from runner.task import discover_task_files, load_tasks
from tests.conftest import REPO

SUITE = {
    "defaults": {"workdir": ".", "tool_mode": "native", "model": "openai:gpt-4.1"},
    "tasks": [{"name": f"task-{i}", "prompt": "Do it."} for i in range(6)]
    + [{"name": "lint", "prompt": "Lint.", "isolation": "worktree", "sandbox": {"mode": "off"}}],
}


def _suite(root: Path) -> Path:
    path = root / "suite.yaml"
    path.write_text(yaml.safe_dump(SUITE, sort_keys=False), encoding="utf-8")
    return path


def test_list_prints_what_a_shard_and_filter_of_run_would_run_and_starts_nothing(
    tmp_path: Path,
) -> None:
    path = _suite(tmp_path)
    args = ["list", str(path), "--filter", "task-*", "--shard", "2/3", "--output", "json"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "runner", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "runner.run.plan.listing" in imported
    assert not imported & {"openai", "anthropic", "mcp", "httpx"}  # no model, no server
    rows = json.loads(done.stdout)
    tasks = load_tasks(discover_task_files([str(path)]))
    expected = select_tasks(tasks, ["task-*"], "2/3")
    assert [r["name"] for r in rows] == [t.name for t in expected]
    first = rows[0]
    assert first["file"] == str(path.resolve()) and first["line"] > 1
    assert first["workdir"] == str(tmp_path.resolve())
    assert (first["model"], first["tool_mode"], first["isolation"]) == (
        "openai:gpt-4.1",
        "native",
        "none",
    )
    assert first["sandbox"] == "auto"


def test_list_as_text_shows_a_row_per_task_with_its_place(run_cli, tmp_path: Path) -> None:
    path = _suite(tmp_path)
    done = run_cli("list", str(path), "--filter", "lint", "--model", "anthropic:claude-x")
    flags = run_cli(
        "list",
        str(path),
        "--filter",
        "lint",
        "--tool-mode",
        "xml",
        "--isolation",
        "none",
        "--sandbox",
        "required",
        "--output",
        "json",
    )
    assert done.returncode == 0, done.stderr
    header, row, count = done.stdout.splitlines()
    assert header.split() == [
        *("name", "where", "workdir", "model", "tool_mode", "isolation", "sandbox")
    ]
    assert row.split()[:2] == ["lint", f"{path.resolve()}:{_line_of(path, 'lint')}"]
    assert row.split()[3:] == ["anthropic:claude-x", "native", "worktree", "off"]
    assert count == "1 task(s)"
    [row_json] = json.loads(flags.stdout)
    chosen = [row_json[k] for k in ("tool_mode", "isolation", "sandbox")]
    assert chosen == ["xml", "none", "required"]


def test_list_repeat_shows_each_sample_and_the_worst_case_cost(run_cli, tmp_path: Path) -> None:
    suite = {
        "defaults": {"workdir": ".", "model": "openai:gpt-4.1"},
        "tasks": [
            {"name": "capped", "prompt": "Do it.", "limits": {"max_cost_usd": 0.5}},
            {"name": "free", "prompt": "Do it."},
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    capped = run_cli("list", str(path), "--repeat", "3", "--filter", "capped")
    both = run_cli("list", str(path), "--repeat", "2", "--output", "json")
    assert capped.returncode == 0, capped.stderr
    lines = capped.stdout.splitlines()
    assert [line.split()[:3] for line in lines[1:4]] == [
        ["capped", f"[{i}/3]", f"{path.resolve()}:{_line_of(path, 'capped')}"] for i in (1, 2, 3)
    ]
    assert lines[-1] == "3 sample(s); worst case $1.50 (each at its limits.max_cost_usd)"
    rows = json.loads(both.stdout)
    assert [(r["name"], r["sample"], r["of"]) for r in rows] == [
        ("capped [1/2]", 1, 2),
        ("capped [2/2]", 2, 2),
        ("free [1/2]", 1, 2),
        ("free [2/2]", 2, 2),
    ]
    unbounded = run_cli("list", str(path), "--repeat", "2")
    assert "worst case unbounded: free set no limits.max_cost_usd" in unbounded.stdout


def _line_of(path: Path, name: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == f"- name: {name}") or 0


def test_a_mistyped_command_or_flag_gets_did_you_mean(run_cli) -> None:
    command = run_cli("rn", "x.yaml")
    assert command.returncode == 2 and "did you mean 'run'?" in command.stderr
    flag = run_cli("run", "x.yaml", "--max-tunrs", "3")
    assert flag.returncode == 2 and "did you mean '--max-turns'?" in flag.stderr
    nested = run_cli("log", "shw", "x.jsonl")
    assert nested.returncode == 2 and "did you mean 'show'?" in nested.stderr
    choice = run_cli("run", "x.yaml", "--output", "jsn")
    assert choice.returncode == 2 and "did you mean 'json'?" in choice.stderr


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in this process; assert it exits 2 and return what it said on stderr."""
    assert main(list(argv)) == 2
    return capsys.readouterr().err


def test_run_refuses_a_prompt_with_task_files_and_neither(capsys, tmp_path: Path) -> None:
    path = str(_suite(tmp_path))
    assert "not both" in _usage_error(capsys, "run", path, "-p", "hello")
    assert "-p" in _usage_error(capsys, "run")
    assert "write run -p -" in _usage_error(capsys, "run", "-")
    assert "the prompt is empty" in _usage_error(capsys, "run", "-p", " \n")
    missing = str(tmp_path / "missing.md")
    assert f"--prompt-file {missing}: No such file" in _usage_error(
        capsys, "run", "--prompt-file", missing
    )
    assert "--workdir and --name go with -p" in _usage_error(capsys, "run", path, "--workdir", ".")


def test_bad_override_flags_are_usage_errors_that_name_the_flag(capsys) -> None:
    run = ("run", "-p", "hi", "--model", "openai:x")
    assert "--max-turns 0" in _usage_error(capsys, *run, "--max-turns", "0")
    assert "--timeout" in _usage_error(capsys, *run, "--timeout", "soon")
    assert "--deny-tool" in _usage_error(capsys, *run, "--deny-tool", "(")
    assert "both write to stdout" in _usage_error(capsys, *run, "--events", "-", "--output", "json")
    assert "--latest or logs" in _usage_error(capsys, "resume", "--latest", "x.jsonl")
    assert "or pass --latest" in _usage_error(capsys, "resume")


def test_resume_latest_without_sessions_names_the_folder(run_cli, tmp_path: Path) -> None:
    done = run_cli("resume", "--latest", "--out", str(tmp_path / "none"))
    assert done.returncode == 2
    assert f"no session logs under {tmp_path / 'none' / 'sessions'}" in done.stderr


def test_help_names_the_list_command_and_the_prompt_flags(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "list" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for flag in ("--prompt-file", "--events", "--result-file", "--allow-tool", "--max-turns"):
        assert flag in text
