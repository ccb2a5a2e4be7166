"""A fired limit kills the command's whole process group at once, whatever backend wraps it
(DESIGN 24, "Limits that fire, kill").

The time limit that once let `sleep 30` run to its end under a 2 s limit: bubblewrap ran with
`--new-session`, so its init and the command sat in a session and process group of their own,
which the runner's `killpg` of the group it started does not reach. They died only by
`--die-with-parent` once the outer bwrap was gone, and a kill that lands while bubblewrap sets
the sandbox up (what a limit that fires as a command starts does) outran it: the sandbox ran
on, reparented to init, holding the command's output pipe (measured: 39 of 200 early kills).

Here each command is started as a task's are (`open_shell` under `confine`) and its group is
killed at once or a few milliseconds in, many times over; no process of any of them may be left.
"""

from __future__ import annotations

import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from runner.workspace import Sandbox, confine, kill_group, open_shell, probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandboxes")

ROUNDS = 40


def _sandbox(name: str, base: Path) -> Sandbox:
    found = probe(name)
    if found.backend != name:
        pytest.skip(f"{name} does not work here: {found.reason}")
    return Sandbox(found.backend, found.executable, base / "w", base / "scratch")


@pytest.fixture
def base() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ar-kill-", dir="/tmp") as folder:
        root = Path(folder).resolve()
        for name in ("w", "scratch/home", "scratch/tmp"):
            (root / name).mkdir(parents=True)
        yield root


def _running(marker: str) -> list[int]:
    """The PIDs whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def _start_and_kill(sandbox: Sandbox, command: str, cwd: Path, delay: float) -> None:
    with confine(sandbox):
        process = await open_shell(
            command,
            cwd=cwd,
            env={"PATH": os.defpath},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    if delay:
        # Not a wait for anything: it moves the kill to another point of bubblewrap's start.
        await anyio.sleep(delay)
    kill_group(process.pid)
    await process.aclose()


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_group_killed_as_its_command_starts_leaves_no_process(base: Path, backend: str) -> None:
    sandbox = _sandbox(backend, base)
    marker = f"29{secrets.randbelow(10**6):06d}"
    rng = random.Random(marker)

    async def rounds() -> None:
        for index in range(ROUNDS):
            delay = 0.0 if index % 4 == 0 else rng.uniform(0, 0.02)
            await _start_and_kill(sandbox, f"sleep {marker}.{index}", base / "w", delay)

    anyio.run(rounds)
    deadline = time.monotonic() + 15
    while (left := _running(f"sleep {marker}.")) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:  # what a failure would leave behind
        kill_group(pid)
        os.kill(pid, 9)
    assert left == [], f"{len(left)} process(es) of killed sandboxes ran on"
