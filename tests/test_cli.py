from __future__ import annotations

import subprocess
import sys

from runner import __version__
from tests.conftest import REPO

SDKS = ("openai", "anthropic", "mcp", "httpx")


def test_version_prints_the_version(run_cli):
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"agent-runner {__version__}"


def _imported_modules(*args: str) -> set[str]:
    # -X importtime writes one line per imported module to stderr.
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "runner", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_version_imports_no_llm_or_mcp_sdk():
    imported = _imported_modules("--version")
    assert "runner" in imported  # the probe works
    assert not imported & set(SDKS)


def test_help_of_every_command_imports_no_llm_or_mcp_sdk():
    for command in ([], ["run"], ["resume"], ["validate"], ["prompt"], ["log", "show"]):
        imported = _imported_modules(*command, "--help")
        assert not imported & set(SDKS), command


def test_help_lists_every_command(run_cli):
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("run", "resume", "validate", "prompt", "log", "report", "mcp"):
        assert command in result.stdout


def test_no_command_prints_help_and_exits_2(run_cli):
    result = run_cli()
    assert result.returncode == 2
    assert "commands" in result.stdout


def test_unknown_flag_is_a_usage_error(run_cli):
    result = run_cli("validate", "--no-such-flag", "x.yaml")
    assert result.returncode == 2


def test_bad_param_syntax_is_a_usage_error(run_cli, tmp_path):
    (tmp_path / "t.yaml").write_text("prompt: hi\n", encoding="utf-8")
    result = run_cli("validate", "t.yaml", "--param", "novalue")
    assert result.returncode == 2
    assert "KEY=VALUE" in result.stderr


def test_missing_task_path_is_a_usage_error(run_cli):
    result = run_cli("validate", "nowhere/*.yaml")
    assert result.returncode == 2
    assert "nowhere/*.yaml" in result.stderr


def test_validate_names_the_task_whose_prompt_folder_is_missing(run_cli, tmp_path):
    (tmp_path / "t.yaml").write_text("prompt: hi\nprompts: [nowhere]\n", encoding="utf-8")
    result = run_cli("validate", "t.yaml")
    assert result.returncode == 2
    assert (
        "t.yaml:1: task 't':" in result.stderr
        and "prompt section folder not found" in result.stderr
    )
