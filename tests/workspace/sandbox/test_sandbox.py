"""The sandbox seam itself: the probe, PID namespaces, git folders, the runner's environ."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from runner.workspace import (
    Sandbox,
    confine,
    git_dirs,
    probe,
    run_shell,
    toolchain_dirs,
)
from tests.conftest import processes_mentioning

REPO = Path(__file__).resolve().parents[3]


def _backend(name: str) -> Sandbox:
    found = probe(name)
    if found.backend != name:
        pytest.skip(f"{name} does not work here: {found.reason}")
    return Sandbox(found.backend, found.executable, Path("/"), Path("/"))


@pytest.fixture
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sandbox-test-") as folder:
        base = Path(folder).resolve()
        for name in ("w", "home", "tmp"):
            (base / name).mkdir()
        yield base


def test_backend_none_finds_nothing_and_says_why() -> None:
    found = probe("none")
    assert found.backend is None and "--sandbox-backend none" in found.reason


def test_probe_is_run_once_per_process() -> None:
    assert probe("auto") is probe("auto")


def test_bwrap_kills_processes_that_left_the_group(scratch: Path) -> None:
    """`setsid -f` and a double fork escape the process group; the PID namespace dies whole."""
    template = _backend("bwrap")
    sandbox = Sandbox(template.backend, template.executable, scratch / "w", scratch)
    marker = f"{time.time_ns() % 10**6}.{uuid.uuid4().int % 10**6:06d}"
    command = f"setsid -f sleep 9{marker}; (sleep 8{marker} &) ; echo started"

    async def run() -> str:
        with confine(sandbox):
            ran = await run_shell(
                command, cwd=scratch / "w", env={"PATH": os.defpath}, input_bytes=b"", timeout_s=30
            )
        return ran.stdout

    try:
        assert "started" in anyio.run(run)
        deadline = time.monotonic() + 10
        while processes_mentioning(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_mentioning(marker) == []
    finally:
        for pid in processes_mentioning(marker):
            os.kill(pid, 9)


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_confined_command_gets_private_home_and_tmp(scratch: Path, backend: str) -> None:
    template = _backend(backend)
    sandbox = Sandbox(template.backend, template.executable, scratch / "w", scratch)

    async def run() -> str:
        with confine(sandbox):
            ran = await run_shell(
                'echo "$HOME $TMPDIR"; echo x > "$TMPDIR/t" && echo y > "$HOME/h" && echo ok',
                cwd=scratch / "w",
                env={"PATH": os.defpath, "HOME": "/elsewhere"},
                input_bytes=b"",
                timeout_s=30,
            )
        return ran.stdout + ran.stderr

    out = anyio.run(run)
    assert f"{scratch}/home {scratch}/tmp" in out and "ok" in out, out


def test_git_dirs_of_a_worktree_are_its_private_and_common_git_folders(tmp_path: Path) -> None:
    main, tree = tmp_path / "main", tmp_path / "tree"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    (main / "a").write_text("a", encoding="utf-8")
    subprocess.run([*git, "-C", str(main), "add", "a"], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "a"], check=True)
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(tree)], check=True)
    assert git_dirs(tree) == ((main / ".git/worktrees/tree").resolve(), (main / ".git").resolve())
    assert git_dirs(main) == ()  # a plain checkout's .git is inside its workdir
    (tree / "sub").mkdir()
    assert git_dirs(tree / "sub")[1] == (main / ".git").resolve()


def test_toolchain_dirs_keep_programs_on_path_inside_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for folder in (".pyenv/shims", ".local/bin", "bin", ".cargo/bin"):
        (home / folder).mkdir(parents=True)
    path = os.pathsep.join(
        [str(home / ".pyenv/shims"), str(home / "bin"), "/usr/bin", "relative", str(home)]
    )
    assert toolchain_dirs(home, path) == (home / ".pyenv", home / "bin")


_UNDUMPABLE_CHILD = """
import ctypes, os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from runner.workspace.sandbox.backends import make_undumpable
if os.getuid() == 0:  # root reads anything with CAP_SYS_PTRACE: both sides become nobody
    os.setgid(65534); os.setuid(65534)
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # a uid change made it undumpable: undo that
if sys.argv[2] == "yes":
    assert make_undumpable()
read = 'cat /proc/$PPID/environ > /dev/null && echo READ'
done = subprocess.run(["/bin/sh", "-c", read], capture_output=True, text=True)
print(done.stdout + done.stderr)
"""


@pytest.mark.parametrize(("undumpable", "readable"), [("yes", False), ("no", True)])
def test_a_child_cannot_read_the_undumpable_runners_environ(
    undumpable: str, readable: bool
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _UNDUMPABLE_CHILD, str(REPO), undumpable],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.defpath, "RUNNER_SECRET_KEY": "sk-not-for-children-0123456789"},
        cwd="/",
    )
    assert ("READ" in done.stdout) is readable, done.stdout + done.stderr
    if not readable:
        assert "Permission denied" in done.stdout
