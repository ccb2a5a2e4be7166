"""The rules of a token or assertion command (runner/mcp/auth/command.py), each pinned for every
instance: both output streams are bounded, the time limit holds however the command spends it,
and nothing the command started outlives it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path

import pytest

from runner.mcp.auth import AuthError
from runner.mcp.auth.command import MAX_OUTPUT, run_command


def _run(code: str, tmp_path: Path, timeout: float = 30.0) -> str:
    return asyncio.run(
        run_command(
            [sys.executable, "-c", code],
            env=dict(os.environ),
            cwd=tmp_path,
            timeout_s=timeout,
            what="the token command",
        )
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child not yet reaped by its (dead) parent's reaper is a zombie: dead.
    status = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    return status != "Z"


_CHILD = (
    "import subprocess, sys\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],\n"
    "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "open('child.pid', 'w').write(str(child.pid))\n"
)


def _wait_dead(pid: int) -> bool:
    """Whether `pid` is gone within a bounded number of checks (its killer may still be at it)."""
    for _ in range(200):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_command_that_closes_its_output_and_keeps_running_is_stopped_at_its_time_limit(
    tmp_path: Path,
) -> None:
    # The output ends at once; the program does not. The limit is on the program, not its pipes.
    code = "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)"
    with pytest.raises(AuthError, match=r"did not finish within 0\.5 s"):
        _run(code, tmp_path, timeout=0.5)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_every_output_stream_is_bounded(stream: str, tmp_path: Path) -> None:
    code = f"import sys\nwhile True: sys.{stream}.write('x' * 65536)"
    with pytest.raises(AuthError, match=f"printed more than {MAX_OUTPUT} bytes") as caught:
        _run(code, tmp_path)
    assert caught.value.kind == "config"


def test_output_of_exactly_the_limit_is_read_in_full(tmp_path: Path) -> None:
    code = f"import sys\nsys.stdout.write('t' * {MAX_OUTPUT})\nsys.stderr.write('e' * {MAX_OUTPUT})"
    assert _run(code, tmp_path) == "t" * MAX_OUTPUT


@pytest.mark.parametrize(
    ("ending", "timeout"),
    [
        ("print('tok-1')", 30.0),  # it ends well
        ("import time; time.sleep(60)", 0.5),  # it runs out of time
        ("import sys\nwhile True: sys.stdout.write('x' * 65536)", 30.0),  # it prints too much
        ("import sys; sys.exit(3)", 30.0),  # it fails
    ],
)
def test_nothing_a_command_started_outlives_it(ending: str, timeout: float, tmp_path: Path) -> None:
    with contextlib.suppress(AuthError):
        _run(_CHILD + ending, tmp_path, timeout=timeout)
    pid = int((tmp_path / "child.pid").read_text(encoding="utf-8"))
    try:
        assert _wait_dead(pid), "the command's child outlived it"
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_the_end_of_stderr_is_quoted_when_a_command_prints_nothing(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="printed nothing; its stderr ends with: 'no token today'"):
        _run("import sys; sys.stderr.write('  no token today\\n')", tmp_path)


def test_only_the_last_300_characters_of_stderr_are_quoted(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('H' * 500 + 'T' * 300); sys.exit(1)"
    with pytest.raises(AuthError) as caught:
        _run(code, tmp_path)
    assert "T" * 300 in str(caught.value) and "H" not in str(caught.value).split("ends with")[1]


def test_a_command_runs_in_the_given_folder_with_the_given_environment_and_no_input(
    tmp_path: Path,
) -> None:
    code = "import os, sys; print(os.getcwd(), os.environ['TOKEN_SEED'], repr(sys.stdin.read()))"
    out = asyncio.run(
        run_command(
            [sys.executable, "-c", code],
            env={"TOKEN_SEED": "seed-1", "PATH": os.environ["PATH"]},
            cwd=tmp_path,
            timeout_s=30,
            what="the token command",
        )
    )
    assert out == f"{tmp_path} seed-1 ''"
