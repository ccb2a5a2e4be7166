"""A cancel (SIGINT) that lands while a command is being spawned still stops the command.

The shell exists as soon as it is forked, before `anyio.open_process` returns it; a cancel in that
last await used to leave the command running, known to nobody who kills. The spawn (a process
edge) is widened here so that the cancel lands exactly there, every time.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from runner.workspace.commands import Commands
from runner.workspace.paths import Confinement

MARKER = "sleep 41.75"


def _running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _wait_for(predicate: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


class _Watcher:
    def __init__(self) -> None:
        self.watched: list[int] = []

    def watch(self, pgid: int) -> None:
        self.watched.append(pgid)

    def forget(self, pgid: int) -> None:
        pass

    def watch_folder(self, folder: Path) -> None:
        pass


@pytest.mark.anyio
async def test_a_cancel_during_the_spawn_still_kills_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open_process = anyio.open_process
    scope = anyio.CancelScope()

    async def spawn_then_cancel(*args: Any, **kwargs: Any) -> Any:
        process = await real_open_process(*args, **kwargs)
        _wait_for(lambda: bool(_running(MARKER)), "the command to start")
        scope.cancel()  # the signal arrives: the process runs, open_process has not returned
        await anyio.sleep(0)
        return process

    monkeypatch.setattr(anyio, "open_process", spawn_then_cancel)
    watcher = _Watcher()
    root = tmp_path / "root"
    root.mkdir()
    commands = Commands(Confinement(root), tmp_path / "out", watcher=watcher)
    try:
        with scope:
            await commands.execute(f"{MARKER} & wait")
        assert scope.cancelled_caught
        assert len(watcher.watched) == 1  # the reaper knew the group before the cancel landed
        _wait_for(lambda: not _running(MARKER), f"{MARKER} to be killed")
    finally:
        for pid in _running(MARKER):  # only if the test failed: never leave its command behind
            os.kill(pid, signal.SIGKILL)
