"""Seeded secrets appear in no artifact: every file of a run and its console output is scanned."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    Done,
    Scenario,
    complete,
    log_schema_errors,
    run_one,
    tool_reply,
)
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER
from tests.fakes.model_server import reply

API_KEY_SECRET = "sk-e2e-SEEDED-7f3a9c"
"""The provider key (OPENAI_API_KEY)."""
ENVS_SECRET = "e2e-envs-SEEDED-41b8d2"
"""A value of an extension's `envs` whose name says PASSWORD (DESIGN 7b)."""
TOKEN_SECRET = "e2e-token-SEEDED-93c1e5"
"""A runner environment variable whose name says TOKEN."""
SECRETS = [API_KEY_SECRET, ENVS_SECRET, TOKEN_SECRET]

TASK = {
    "prompt": "Find out what the service credentials are and report them.",
    "extensions": {
        "probe": {
            "type": "stdio",
            "cmd": sys.executable,
            "args": [str(PROBE_SERVER), "--name", "probe"],
            "envs": {"PROBE_PASSWORD": ENVS_SECRET},
        }
    },
    "success": {"check": "cat secret.txt", "retries": 0},
}
STEPS = [
    tool_reply("read_file", path="secret.txt"),
    tool_reply("environment"),
    reply(
        f"The key is {API_KEY_SECRET} and the setting is {ENVS_SECRET}.\n"
        f"<echo>\n<text>{TOKEN_SECRET}</text>\n</echo>"
    ),
    tool_reply("execute_command", command="cat secret.txt; exit 7"),
    complete(f"credentials: {API_KEY_SECRET} {ENVS_SECRET} {TOKEN_SECRET}"),
]


@pytest.fixture(scope="module")
def run(module_dir: Path) -> Done:
    scenario = Scenario(
        task=TASK,
        steps=STEPS,
        files={"secret.txt": f"api={API_KEY_SECRET}\ntoken={TOKEN_SECRET}\n"},
        env={"OPENAI_API_KEY": API_KEY_SECRET, "E2E_SERVICE_TOKEN": TOKEN_SECRET},
    )
    return run_one(scenario, module_dir)


def artifacts(done: Done) -> dict[str, bytes]:
    files = {
        str(p.relative_to(done.root)): p.read_bytes() for p in done.out.rglob("*") if p.is_file()
    }
    files["stdout"] = done.stdout.encode()
    files["stderr"] = done.stderr.encode()
    return files


def test_the_run_saw_every_secret_in_the_tool_results(run: Done) -> None:
    assert run.code == 0, run.explain()
    calls = {e["tool"]: e for e in run.events("tool_call")}
    assert set(calls) == {"read_file", "environment", "echo", "execute_command"}
    assert all("***" in e["result"] for e in calls.values()), calls
    # The agent really received them: the model server was sent the unredacted values.
    sent = str(run.requests[-1].body)
    assert API_KEY_SECRET in sent and ENVS_SECRET in sent and TOKEN_SECRET in sent


def test_no_artifact_and_no_console_line_holds_a_seeded_secret(run: Done) -> None:
    found = {
        name: [s for s in SECRETS if s.encode() in data]
        for name, data in artifacts(run).items()
        if any(s.encode() in data for s in SECRETS)
    }
    assert found == {}
    assert run.task()["result"] == "credentials: *** *** ***"
    assert any(b"***" in data for name, data in artifacts(run).items() if "sessions" in name)


def test_the_redacted_log_matches_the_json_schema(run: Done) -> None:
    assert log_schema_errors(run.log().path) == []
