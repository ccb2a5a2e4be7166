"""A secret inside a task name: the task runs and logs; no file name and no artifact holds it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import NO_WORKSPACE, Done, Scenario, complete, run_one
from tests.fakes.mcp_test_server import SCRIPT

LONG_SECRET = "s3cr3tvalue99x"
"""At least 8 characters, in a secret-named variable: masked wherever it appears."""


@pytest.fixture(scope="module")
def run(module_dir: Path) -> Done:
    scenario = Scenario(
        task={
            "defaults": {**NO_WORKSPACE, "workdir": "w"},
            "tasks": [
                {"name": "postgres-migration", "prompt": "Migrate."},
                {
                    "name": f"deploy-{LONG_SECRET}-check",
                    "prompt": "Check.",
                    # A stdio server: its stderr log goes in a folder named after the task.
                    "extensions": {"probe": {"cmd": sys.executable, "args": [str(SCRIPT)]}},
                },
            ],
        },
        steps=[complete("one"), complete("two")],
        env={"POSTGRES_PASSWORD": "postgres", "DEPLOY_TOKEN": LONG_SECRET},
    )
    return run_one(scenario, module_dir)


def test_tasks_whose_names_hold_a_secret_run_and_write_their_logs(run: Done) -> None:
    assert run.code == 0, run.explain()
    tasks = run.summary()["tasks"]
    assert [t["status"] for t in tasks] == ["passed", "passed"]
    assert len(run.logs()) == 2
    for entry in tasks:
        # The summary's references lead to the logs that were written.
        session_log = run.root / entry["session_log"]
        assert session_log.is_file(), entry
        assert session_log.stem == entry["session_id"]


def test_the_long_secret_is_in_no_file_name_and_no_artifact(run: Done) -> None:
    for path in run.out.rglob("*"):
        assert LONG_SECRET not in str(path.relative_to(run.root))
        if path.is_file():
            assert LONG_SECRET.encode() not in path.read_bytes(), path
    assert LONG_SECRET not in run.stdout + run.stderr
    names = [t["name"] for t in run.summary()["tasks"]]
    assert "deploy-***-check" in names
    assert list(run.out.glob("mcp-logs/*/mcp/probe.stderr.log"))
