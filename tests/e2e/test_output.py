"""What the CLI prints: a reader that leaves early, `--output json` on GitHub Actions, annotations
for configuration errors, and console reasons that keep their cause."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    MODEL,
    NO_WORKSPACE,
    RUN_TIMEOUT_S,
    Done,
    Scenario,
    clean_env,
    complete,
    default_args,
    prepare,
    run_all,
)
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER
from tests.fakes.model_server import FakeModelServer

ACTIONS = {"GITHUB_ACTIONS": "true"}
LONG_DIR = "a-folder-with-a-rather-long-name/and-another-long-folder-below-it"

PROBE_DENY_TYPO = {
    "extensions": {"probe": {"cmd": sys.executable, "args": [str(PROBE_SERVER), "--name", "p"]}},
    "tools": {"deny": ["ecko"]},
}

SCENARIOS = {
    "server_glob_validate": Scenario(
        task=PROBE_DENY_TYPO, default=complete(), args=["validate", "t.yaml"]
    ),
    "server_glob_run": Scenario(task=PROBE_DENY_TYPO, default=complete()),
    "json_on_actions": Scenario(
        task={**NO_WORKSPACE, "success": {"check": "exit 3"}},
        steps=[complete()],
        args=default_args("--output", "json"),
        env=ACTIONS,
    ),
    "config_error_on_actions": Scenario(
        task="name: t\nprompt: Do it.\nworkdir: w\nlimits: {max_turnz: 3}\n",
        default=complete(),
        env=ACTIONS,
    ),
    "mcp_start_failure": Scenario(
        task={
            "extensions": {
                "timeserver": {"cmd": sys.executable, "args": ["-m", "mcp_server_not_installed"]}
            }
        },
        default=complete(),
        args=["run", "t.yaml", "--model", MODEL, "--out", f"{LONG_DIR}/{LONG_DIR}/OUT"],
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def test_a_reader_that_leaves_early_gets_no_traceback_and_the_run_keeps_its_code(
    tmp_path: Path,
) -> None:
    # `| head -1` with the reader gone before the first line: every write meets a broken pipe.
    prepare(Scenario(task=NO_WORKSPACE), tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)
    with FakeModelServer([complete()]) as server:
        env = clean_env(
            tmp_path, {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-x-123456"}
        )
        done = subprocess.run(
            [sys.executable, "-m", "runner", *default_args()],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    os.close(write_end)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
    assert json.loads((tmp_path / "OUT" / "summary.json").read_text(encoding="utf-8"))


def test_json_output_on_actions_is_pure_json_and_the_commands_go_to_stderr(
    runs: dict[str, Done],
) -> None:
    done = runs["json_on_actions"]
    assert done.code == 1, done.explain()
    summary = json.loads(done.stdout)  # the whole of stdout is the one document
    assert summary["tasks"][0]["status"] == "failed"
    assert "::add-mask::sk-e2e-test-key" in done.stderr
    assert "::error file=t.yaml" in done.stderr


def test_a_configuration_error_on_actions_is_annotated_at_its_file_and_line(
    runs: dict[str, Done],
) -> None:
    done = runs["config_error_on_actions"]
    assert done.code == 2, done.explain()
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("::error ")]
    assert line.startswith("::error file=t.yaml,line=4,col="), line
    assert "max_turnz" in line and "unknown key" in line


def test_the_console_keeps_the_cause_of_an_mcp_start_failure(runs: dict[str, Done]) -> None:
    done = runs["mcp_start_failure"]
    assert done.code == 4, done.explain()
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("ERROR")]
    assert "No module named mcp_server_not_installed" in line, line


def test_a_glob_over_an_mcp_servers_tools_is_checked_when_the_run_lists_them(
    runs: dict[str, Done],
) -> None:
    # `validate` starts no server (decision in runner/mcp/policy.py), so it cannot know `echo`.
    assert runs["server_glob_validate"].code == 0, runs["server_glob_validate"].explain()
    done = runs["server_glob_run"]
    assert done.code == 2, done.explain()
    assert done.requests == []
    assert "tools.deny[0]: 'ecko' matches no tool" in done.task()["reason"]
    assert "did you mean 'echo'?" in done.task()["reason"]
