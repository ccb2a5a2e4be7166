"""Shared fixtures: run the CLI in a subprocess, as users do."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def git(root: Path, *args: str) -> str:
    """Run git in `root` as a test's set-up does (a fixed author; failures raise); its stdout."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout


def processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes (zombies aside) whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def gone(text: str, timeout: float = 10.0) -> bool:
    """Whether every process mentioning `text` has exited (a SIGKILL takes a moment to land)."""
    deadline = time.monotonic() + timeout
    while processes_mentioning(text) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not processes_mentioning(text)


@pytest.fixture
def memory_tmp_path() -> Iterator[Path]:
    """A folder on the memory file system when there is one (`/dev/shm`), for tests that make and
    walk thousands of entries, which a loaded disk turns from a tenth of a second into ten."""
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as folder:
        yield Path(folder).resolve()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def run_cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `python -m runner ARGS` with a clean config home; returns the completed process."""

    def run(
        *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_RUNNER_")}
        full_env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
        full_env["PYTHONPATH"] = str(REPO)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "runner", *args],
            cwd=cwd or tmp_path,
            env=full_env,
            capture_output=True,
            check=False,
            text=True,
            timeout=timeout,
        )

    return run
