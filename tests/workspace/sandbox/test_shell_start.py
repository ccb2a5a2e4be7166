"""A cancellation that lands while a command starts kills the command's whole group at once.

The time limit of a task is an `asyncio.timeout`, whose cancellation anyio's shield does not hold
back. It once landed in the await that follows the fork inside `open_process`; asyncio then killed
the leader alone and waited for the output pipe to close, which a child of the command held open
to its end (a 2 s limit waited 30 s for `sleep 30`, and the child was never killed). The tests make
the limit expire at exactly that point: right after the fork, from inside asyncio's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.workspace import Sandbox, confine, open_shell, probe
from runner.workspace.sandbox import shell
from runner.workspace.sandbox.shell import start_group
from tests.conftest import gone
from tests.conftest import processes_mentioning as alive
from tests.fakes import forkpoint


@pytest.fixture
def fork_point(monkeypatch: pytest.MonkeyPatch) -> forkpoint.ForkPoint:
    return forkpoint.expire_after_the_fork(monkeypatch)


@pytest.fixture
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="shell-start-") as folder:
        base = Path(folder).resolve()
        for name in ("w", "home", "tmp"):
            (base / name).mkdir()
        yield base


def _sandbox(backend: str, scratch: Path) -> Sandbox | None:
    if backend == "none":
        return None
    found = probe(backend)
    if found.backend != backend:
        pytest.skip(f"{backend} does not work here: {found.reason}")
    return Sandbox(found.backend, found.executable, scratch / "w", scratch)


@pytest.mark.parametrize("backend", ["none", "bwrap", "landlock"])
def test_a_time_limit_expiring_as_a_command_starts_kills_its_children_too(
    fork_point: forkpoint.ForkPoint, scratch: Path, backend: str
) -> None:
    sandbox = _sandbox(backend, scratch)
    marker = f"{uuid.uuid4().int % 10**6:06d}"
    finished = scratch / "w" / "finished"
    # The shell stays (two commands), and its child holds the output pipe until it ends.
    command = f"(touch ready; sleep 4.{marker}; touch finished); true"

    async def run() -> None:
        async with asyncio.timeout(None) as limit:
            fork_point.arm(limit, scratch / "w" / "ready")
            with confine(sandbox) if sandbox is not None else contextlib.nullcontext():
                await open_shell(
                    command,
                    cwd=scratch / "w",
                    env={"PATH": os.defpath},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )

    try:
        with pytest.raises(TimeoutError):
            asyncio.run(run())
        assert fork_point.fired(), "the limit was never set to expire"
        assert gone(marker), f"the command's child outlived the time limit: {alive(marker)}"
        assert not finished.exists(), "the command ran to its end before the limit was obeyed"
    finally:
        for pid in alive(marker):
            os.kill(pid, 9)


def test_a_start_cancelled_again_while_its_group_is_killed_still_kills_it(
    fork_point: forkpoint.ForkPoint, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A second cancellation (a second Ctrl-C) that lands while the group is being killed does
    not cut the kill short, and the caller still ends cancelled."""
    marker = f"{uuid.uuid4().int % 10**6:06d}"
    real_kill = shell.kill_group
    cancelled_again: list[bool] = []

    async def run() -> None:
        task = asyncio.current_task()
        assert task is not None

        def cancel_then_kill(pid: int) -> None:
            cancelled_again.append(task.cancel())
            real_kill(pid)

        monkeypatch.setattr(shell, "kill_group", cancel_then_kill)
        async with asyncio.timeout(None) as limit:
            fork_point.arm(limit, tmp_path / "ready")
            await start_group(
                ["/bin/sh", "-c", f"(touch ready; sleep 5.{marker}; true); true"],
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )

    try:
        with pytest.raises((TimeoutError, asyncio.CancelledError)):
            asyncio.run(run())
        assert cancelled_again == [True]
        assert gone(marker), f"the command outlived two cancellations: {alive(marker)}"
    finally:
        for pid in alive(marker):
            os.kill(pid, 9)


def test_a_command_that_cannot_start_raises_its_error() -> None:
    async def run() -> None:
        await start_group(["/no/such/program"], stdin=subprocess.DEVNULL)

    with pytest.raises(FileNotFoundError):
        asyncio.run(run())
