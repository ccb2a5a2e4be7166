"""Stdio servers start before the MCP SDK is imported; an early server nobody takes is killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.mcp.connection import Connection
from runner.mcp.extension import ExtensionConfig
from runner.mcp.render import StartFailure
from runner.mcp.spawn import SDK_INHERITED_ENV, spawn_early
from runner.settings import environ
from tests.mcp.conftest import sdk_server

REPO = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: the test process has imported the SDK long ago. An audit hook
# records, in order, the server's spawn and the first import of the SDK's client.
_PROBE = """
import json, sys, anyio
order = []
def hook(event, args):
    if event == "subprocess.Popen" and "mcp_test_server" in " ".join(map(str, args[1])):
        order.append("spawn")
    elif event == "import" and args[0] == "mcp.client" and "import" not in order:
        order.append("import")
sys.addaudithook(hook)
from runner.mcp import ExtensionConfig, McpHub
from runner.settings import environ

async def main():
    server = ExtensionConfig(cmd=sys.executable, args=[sys.argv[1]])
    workdir = __import__("pathlib").Path(sys.argv[2])
    async with McpHub({"s": server}, workdir=workdir, artifacts_dir=workdir / "a",
                      startup_timeout_s=60, base_env=environ()) as hub:
        tools = [spec.name for spec in hub.tools]
    print(json.dumps({"order": order, "tools": tools}))

anyio.run(main)
"""


def test_a_stdio_server_is_spawned_before_the_sdk_is_imported(tmp_path: Path) -> None:
    from tests.fakes.mcp_test_server import SCRIPT

    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(SCRIPT), str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    assert seen["order"] == ["spawn", "import"]
    assert "echo" in seen["tools"]  # and the hub then talks to that very process


def test_the_inherited_variables_are_the_sdks() -> None:
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    assert list(SDK_INHERITED_ENV) == list(DEFAULT_INHERITED_ENV_VARS)


@pytest.mark.anyio
async def test_an_early_server_whose_connection_fails_is_killed(tmp_path: Path) -> None:
    import anyio

    config = sdk_server().model_copy(update={"name": "s"})
    early = await spawn_early([config], workdir=tmp_path, base_env=environ())
    process = early["s"]
    blocker = tmp_path / "artifacts"
    blocker.write_text("a file where the stderr log's folder should be", encoding="utf-8")
    connection = Connection(
        config,
        workdir=tmp_path,
        stderr_path=blocker / "mcp" / "s.stderr.log",
        base_env=environ(),
        startup_timeout_s=30,
        early=process,
    )

    async with anyio.create_task_group() as group:
        with pytest.raises(StartFailure, match="Not a directory"):
            await connection.start(group)

    assert process.returncode is not None  # killed and reaped, not left running


@pytest.mark.anyio
async def test_a_command_that_cannot_start_is_left_to_the_connection(tmp_path: Path) -> None:
    missing = ExtensionConfig(name="gone", cmd="/nonexistent/mcp-server")

    assert await spawn_early([missing], workdir=tmp_path, base_env=environ()) == {}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_an_early_server_gets_the_tasks_traceparent(tmp_path: Path) -> None:
    from runner.workspace import TRACE_ENV

    probe = ExtensionConfig(
        name="probe",
        cmd=sys.executable,
        args=["-c", "import os; print(os.environ.get('TRACEPARENT'))"],
    )
    token = TRACE_ENV.set({"TRACEPARENT": "00-abc-def-01"})
    try:
        process = (await spawn_early([probe], workdir=tmp_path, base_env=environ()))["probe"]
    finally:
        TRACE_ENV.reset(token)
    assert process.stdout is not None
    out = b""
    async for chunk in process.stdout:
        out += chunk
    await process.aclose()

    assert out.decode().strip() == "00-abc-def-01"


def test_a_time_limit_expiring_as_an_early_server_starts_kills_its_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit lands just after the fork (tests/fakes/forkpoint.py): the server's child, which
    holds its pipes, is killed with it instead of keeping the cancelled start waiting."""
    import asyncio
    import uuid

    from tests.conftest import gone
    from tests.conftest import processes_mentioning as alive
    from tests.fakes.forkpoint import expire_after_the_fork

    marker = f"{uuid.uuid4().int % 10**6:06d}"
    server = ExtensionConfig(
        name="slow",
        cmd="/bin/sh",
        args=["-c", f"(touch ready; sleep 5.{marker}; touch started); true"],
    )
    fork_point = expire_after_the_fork(monkeypatch)

    async def run() -> None:
        async with asyncio.timeout(None) as limit:
            fork_point.arm(limit, tmp_path / "ready")
            await spawn_early([server], workdir=tmp_path, base_env=environ())

    try:
        with pytest.raises(TimeoutError):
            asyncio.run(run())
        assert fork_point.fired(), "the limit was never set to expire"
        assert gone(marker), f"the server's child outlived the time limit: {alive(marker)}"
        assert not (tmp_path / "started").exists()
    finally:
        for pid in alive(marker):
            os.kill(pid, 9)
