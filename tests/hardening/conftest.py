"""Fixtures shared by the hardening suite (fault injection, hostile input, load)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.e2e.conftest import (
    Done,
    Scenario,
    Started,
    kill,
    log_schema_errors,
    module_dir,
    server,
    start,
)
from tests.fakes.mcp_test_server import SCRIPT
from tests.fakes.model_server import FakeModelServer

__all__ = ["FAULT_SERVER", "fault_server", "module_dir", "sdk_server_yaml", "server"]

FAULT_SERVER = Path(__file__).resolve().parent / "mcp_fault_server.py"


def sdk_server_yaml(*options: str, **fields: Any) -> dict[str, Any]:
    """The `extensions:` entry of the SDK test server over stdio (tests/mcp's `sdk_server`)."""
    return {"cmd": sys.executable, "args": [str(SCRIPT), *options], **fields}


def fault_server(*options: str, **fields: Any) -> dict[str, Any]:
    """The `extensions:` entry of the SDK test server plus the `big` and `flood` tools."""
    return {"cmd": sys.executable, "args": [str(FAULT_SERVER), *options], **fields}


# --- Fault matrix (provider, model, process faults): both wire formats, seeded secrets. ---------
#
# Every run of the matrix carries a seeded secret in each provider key and in a secret-named
# variable; `secret_leaks` scans every artifact and the console output for them.

SEEDED_OPENAI_KEY = "sk-harden-SEEDED-openai-5d1e0a"
SEEDED_ANTHROPIC_KEY = "sk-ant-harden-SEEDED-8c2f7b"
SEEDED_TOKEN = "harden-token-SEEDED-a41b93"
SEEDED_SECRETS = (SEEDED_OPENAI_KEY, SEEDED_ANTHROPIC_KEY, SEEDED_TOKEN)
SECRET_ENV = {
    "OPENAI_API_KEY": SEEDED_OPENAI_KEY,
    "ANTHROPIC_API_KEY": SEEDED_ANTHROPIC_KEY,
    "HARDEN_DEPLOY_TOKEN": SEEDED_TOKEN,
}
WIRES = ("openai", "anthropic")
WIRE_MODELS = {"openai": "openai:gpt-4.1", "anthropic": "anthropic:claude-sonnet-4-5"}
LENGTH_STOP = {"openai": "length", "anthropic": "max_tokens"}
"""The stop reason of a reply cut at the output-token limit, per wire format."""


def wire_args(wire: str, *more: str) -> list[str]:
    """`run t.yaml` on the wire's model into OUT."""
    return ["run", "t.yaml", "--model", WIRE_MODELS[wire], "--out", "OUT", *more]


def start_on(
    scenario: Scenario, root: Path, wire: str = "openai", server: FakeModelServer | None = None
) -> Started:
    """`start` on the given wire format, with the seeded secrets in the environment."""
    if server is None:
        server = FakeModelServer(scenario.steps, default=scenario.default).start()
    env = {
        **SECRET_ENV,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        **scenario.env,
    }
    args = scenario.args if scenario.args is not None else wire_args(wire)
    return start(dataclasses.replace(scenario, env=env, args=args), root, server)


def run_matrix(cases: Mapping[str, tuple[Scenario, str]], base: Path) -> dict[str, Done]:
    """Run every (scenario, wire) at once, each in `base/<name>`; return when all have ended."""
    started: dict[str, Started] = {}
    try:
        for name, (scenario, wire) in cases.items():
            started[name] = start_on(scenario, base / name, wire)
        return {name: run.wait() for name, run in started.items()}
    finally:
        for run in started.values():
            kill(run.process)
            run.server.stop()


def secret_leaks(root: Path, *console: str) -> dict[str, list[str]]:
    """Files under `root` (and console texts) holding a seeded secret, with the secrets found."""
    found: dict[str, list[str]] = {}
    texts = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    texts.update({f"console[{i}]": text.encode() for i, text in enumerate(console)})
    for name, data in texts.items():
        hits = [s for s in SEEDED_SECRETS if s.encode() in data]
        if hits:
            found[name] = hits
    return found


JUNIT_ELEMENT = {
    "passed": None,
    "failed": "failure",
    "budget_exceeded": "failure",
    "error": "error",
    "interrupted": "error",
}


def assert_reported(done: Done, code: int, status: str) -> None:
    """The exit code, and the task status in summary.json, JUnit and the log's end line."""
    assert done.code == code, done.explain()
    assert done.summary()["exit_code"] == code
    assert done.task()["status"] == status, done.task()
    case = done.testcase()
    element = JUNIT_ELEMENT[status]
    present = [tag for tag in ("failure", "error") if case.find(tag) is not None]
    assert present == ([element] if element else []), present
    record = done.log()
    assert record.end is not None and record.end["status"] == status, record.end
    assert log_schema_errors(record.path) == []


def event_kinds(done: Done) -> list[str]:
    """The types of the single log's events, in order (the header aside)."""
    return [str(event["type"]) for event in done.log().events]
