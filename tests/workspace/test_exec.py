"""execute_command (search_files: test_search.py)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from runner.workspace.commands import MAX_OUTPUT_CHARS, Commands, blocked_reason
from runner.workspace.paths import WorkspaceError


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
