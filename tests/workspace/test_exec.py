"""execute_command (search_files: test_search.py)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from runner.settings import WorkspaceLimits
from runner.workspace.commands import MAX_OUTPUT_CHARS, Commands, blocked_reason
from runner.workspace.paths import Confinement, WorkspaceError


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -rf /*",
        "sudo rm -fr / ",
        "rm -r -f /",
        "rm -rf --no-preserve-root /",
        "mkfs.ext4 /dev/sda1",
        ":(){ :|:& };:",
        "bomb() { bomb | bomb & }; bomb",
        "echo x > /etc/passwd",
        "echo x >> /usr/local/bin/tool",
        "echo x | tee -a /etc/hosts",
        "cp evil /bin/ls",
        "dd if=/dev/zero of=/boot/vmlinuz",
        "sed -i s/a/b/ /etc/hosts",
    ],
)
def test_destructive_commands_are_blocked(command: str) -> None:
    assert blocked_reason(command) is not None


@pytest.mark.parametrize(
    "command",
    ["rm -rf build/", "rm -rf ./dist", "cat /etc/os-release", "ls /usr/bin", "echo hi > out.txt"],
)
def test_ordinary_commands_are_not_blocked(command: str) -> None:
    assert blocked_reason(command) is None


@pytest.mark.anyio
async def test_blocked_command_is_refused_before_running(commands: Commands, root: Path) -> None:
    with pytest.raises(WorkspaceError, match="refused"):
        await commands.execute("touch ran && rm -rf /")
    assert not (root / "ran").exists()


@pytest.mark.anyio
async def test_execute_command_runs_in_the_root_and_reports_the_exit_code(
    commands: Commands, root: Path
) -> None:
    text = await commands.execute("pwd; echo oops >&2; exit 3")
    assert text.splitlines() == ["exit code 3", str(root.resolve()), "oops"]


@pytest.mark.anyio
async def test_execute_command_caps_output_and_keeps_the_full_output(commands: Commands) -> None:
    text = await commands.execute(f"seq 1 {MAX_OUTPUT_CHARS}")
    assert len(text) < MAX_OUTPUT_CHARS + 500
    log = Path(text.split("full output (")[1].split(" is in ")[1].split(", readable")[0])
    assert log.read_text(encoding="utf-8").splitlines()[-1] == str(MAX_OUTPUT_CHARS)
    assert text.rstrip().endswith(str(MAX_OUTPUT_CHARS))


@pytest.mark.anyio
async def test_execute_command_timeout_kills_the_process_group(
    commands: Commands, root: Path
) -> None:
    with anyio.fail_after(15):
        text = await commands.execute("sleep 60 & echo $! > child.pid; wait", timeout_s=1)
    assert text.startswith("timed out after 1 s")
    child = int((root / "child.pid").read_text(encoding="utf-8"))
    with anyio.fail_after(5):
        while _alive(child):
            await anyio.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); read its state.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


@pytest.mark.anyio
async def test_output_over_the_cap_keeps_the_head_a_note_and_the_end(
    paths: Confinement, tmp_path: Path
) -> None:
    commands = Commands(
        paths, tmp_path / "out", limits=WorkspaceLimits(command_output_max_bytes=100_000)
    )
    text = await commands.execute("seq 1 200000")
    assert text.startswith("exit code 0\n1\n2\n")
    assert text.rstrip().endswith("\n200000")
    assert "its first 100000 bytes and its end (of 1288895 bytes) are in" in text
    log = Path(text.split(" are in ")[1].split(", readable")[0])
    kept = log.read_bytes()
    assert kept.startswith(b"1\n2\n3\n")
    assert b"bytes not kept: over the 100000-byte limit of this file" in kept
    assert kept.endswith(b"199999\n200000\n")
    assert len(kept) < 100_000 + 70_000


@pytest.mark.anyio
async def test_output_just_over_the_cap_is_kept_whole_in_the_file(
    paths: Confinement, tmp_path: Path
) -> None:
    commands = Commands(
        paths, tmp_path / "out", limits=WorkspaceLimits(command_output_max_bytes=50)
    )
    text = await commands.execute("seq 1 30")
    assert text.startswith("exit code 0\n1\n")
    (log,) = (tmp_path / "out").iterdir()
    assert log.read_text(encoding="utf-8") == "".join(f"{n}\n" for n in range(1, 31))


@pytest.mark.anyio
async def test_a_background_process_that_keeps_the_output_open_does_not_hold_the_call(
    commands: Commands,
) -> None:
    # setsid leaves the command's process group, so killing the group misses it; it still holds
    # the output pipe. The call reads on for a moment, then returns.
    with anyio.fail_after(30):
        text = await commands.execute("setsid sleep 30 & echo started")
    assert text == "exit code 0\nstarted\n"
