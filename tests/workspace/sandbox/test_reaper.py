"""The reaper kills command process groups that the runner leaves behind when it dies.

Real processes throughout. The "runner" is a child Python process driven line by line over stdin;
the process groups it watches are started by the test itself, so the test can reap them and read
how they ended (returncode -SIGKILL), whatever init does with orphans.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runner.workspace.sandbox.reaper import Reaper, shared_reaper

REPO = Path(__file__).resolve().parents[3]
DEADLINE = 10.0
"""Generous: a bound on waiting for things that take milliseconds, never a timing assertion."""

# Each line on stdin is one call; each reply is the reaper's pid after it ("None" if none runs).
RUNNER = """\
import signal, sys
from pathlib import Path
from runner.workspace.sandbox.reaper import Reaper
signal.signal(signal.SIGINT, lambda *_: print("interrupted", flush=True))
reaper = Reaper()
for line in sys.stdin:
    verb, _, arg = line.strip().partition(" ")
    if verb == "watch":
        reaper.watch(int(arg))
    elif verb == "forget":
        reaper.forget(int(arg))
    elif verb == "folder":
        reaper.watch_folder(Path(arg))
    elif verb == "unfolder":
        reaper.forget_folder(Path(arg))
    elif verb == "close":
        reaper.close()
    print(reaper.pid, flush=True)
"""


class Group:
    """A process group of two sleeping processes, both children of the test."""

    def __init__(self) -> None:
        self.leader = _sleeper(process_group=0)
        self.member = _sleeper(process_group=self.leader.pid)
        self.pgid = self.leader.pid

    def alive(self) -> bool:
        return self.leader.poll() is None and self.member.poll() is None

    def assert_killed(self) -> None:
        for process in (self.leader, self.member):
            assert process.wait(timeout=DEADLINE) == -signal.SIGKILL

    def stop(self) -> None:
        for process in (self.leader, self.member):
            process.kill()
            process.wait()


class Runner:
    """A child Python process that owns a Reaper, as the real runner does."""

    def __init__(self, stderr: Path) -> None:
        self.stderr = stderr
        self.reaper_pids: set[int] = set()
        # Its own session, so the SIGINT test can signal its group without reaching pytest.
        with stderr.open("w", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", RUNNER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                text=True,
                start_new_session=True,
            )

    def call(self, line: str) -> int | None:
        """Send one call and return the reaper's pid after it."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        reply = self.read()
        pid = None if reply == "None" else int(reply)
        if pid is not None:
            self.reaper_pids.add(pid)
        return pid

    def read(self) -> str:
        assert self.process.stdout is not None
        reply = self.process.stdout.readline()
        if not reply:
            pytest.fail(f"the runner exited: {self.stderr.read_text(encoding='utf-8')}")
        return reply.strip()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()

    def stop(self) -> None:
        self.kill()
        for pid in self.reaper_pids:
            # The reaper ignores SIGTERM and ends at EOF, which the kill above just caused;
            # SIGKILL only one that is still there after the deadline.
            if not _exits(pid):
                os.kill(pid, signal.SIGKILL)


def _sleeper(process_group: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["sleep", "300"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        process_group=process_group,
    )


def _alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie (an exited orphan its new parent has not reaped) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return not sys.platform.startswith("linux")
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _exits(pid: int) -> bool:
    """Whether `pid` stops running within the deadline."""
    return _wait_until(lambda: not _alive(pid))


def _wait_until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def group() -> Iterator[Callable[[], Group]]:
    started: list[Group] = []

    def start() -> Group:
        started.append(Group())
        return started[-1]

    yield start
    for each in started:
        each.stop()


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Runner]:
    child = Runner(tmp_path / "runner.stderr")
    yield child
    child.stop()


def test_watched_group_is_killed_when_the_runner_is_killed(
    runner: Runner, group: Callable[[], Group]
) -> None:
    commands = group()
    reaper_pid = runner.call(f"watch {commands.pgid}")
    assert reaper_pid is not None
    runner.kill()
    commands.assert_killed()
    assert _exits(reaper_pid), "the reaper outlived its work"


def test_forgotten_group_survives_close(runner: Runner, group: Callable[[], Group]) -> None:
    kept, watched = group(), group()
    runner.call(f"watch {kept.pgid}")
    runner.call(f"watch {watched.pgid}")
    runner.call(f"forget {kept.pgid}")
    assert runner.call("close") is None
    watched.assert_killed()
    # close() waited for the reaper to exit, so it has had its only chance to kill `kept`.
    assert kept.alive()


def test_close_kills_watched_groups_and_the_reaper_exits(group: Callable[[], Group]) -> None:
    reaper = Reaper()
    reaper.close()  # nothing to close yet
    first = group()
    reaper.watch(first.pgid)
    first_pid = reaper.pid
    assert first_pid is not None
    reaper.close()
    reaper.close()
    first.assert_killed()
    assert reaper.pid is None
    assert not _alive(first_pid)

    second = group()
    reaper.watch(second.pgid)
    assert reaper.pid not in (None, first_pid)
    reaper.close()
    second.assert_killed()


def test_dead_reaper_is_replaced_and_earlier_groups_stay_protected(
    runner: Runner, group: Callable[[], Group]
) -> None:
    earlier, later = group(), group()
    first_pid = runner.call(f"watch {earlier.pgid}")
    assert first_pid is not None
    os.kill(first_pid, signal.SIGKILL)
    assert _exits(first_pid)
    second_pid = runner.call(f"watch {later.pgid}")
    assert second_pid not in (None, first_pid)
    assert earlier.alive()
    runner.kill()
    earlier.assert_killed()
    later.assert_killed()


def test_dead_reaper_is_logged_once_and_never_raised(
    group: Callable[[], Group], caplog: pytest.LogCaptureFixture
) -> None:
    reaper = Reaper()
    try:
        reaper.watch(group().pgid)
        for _ in range(2):
            pid = reaper.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            assert _exits(pid)
            reaper.watch(group().pgid)
            assert reaper.pid not in (None, pid)
        reaper.forget(group().pgid)  # never watched: a no-op
        assert len(caplog.records) == 1
        assert "reaper" in caplog.records[0].getMessage()
    finally:
        reaper.close()


def test_ctrl_c_to_the_runners_process_group_does_not_reach_the_reaper(
    runner: Runner, group: Callable[[], Group]
) -> None:
    commands = group()
    runner.call(f"watch {commands.pgid}")
    os.killpg(runner.process.pid, signal.SIGINT)
    assert runner.read() == "interrupted"
    # Had the SIGINT reached the reaper, nothing would kill the group now.
    runner.kill()
    commands.assert_killed()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/status")
def test_reaper_ignores_sigint_and_sigterm(runner: Runner, group: Callable[[], Group]) -> None:
    commands = group()
    pid = runner.call(f"watch {commands.pgid}")
    assert pid is not None
    wanted = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))

    def ignoring() -> bool:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
        ignored = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
        return int(ignored.split()[1], 16) & wanted == wanted

    # Signals sent before the interpreter has started would be a test of startup, not of this.
    assert _wait_until(ignoring)
    os.kill(pid, signal.SIGINT)
    os.kill(pid, signal.SIGTERM)
    runner.kill()
    commands.assert_killed()


def test_watch_refuses_an_id_that_is_no_process_group() -> None:
    reaper = Reaper()
    with pytest.raises(ValueError, match="process group"):
        reaper.watch(0)
    assert reaper.pid is None


def test_shared_reaper_is_one_instance() -> None:
    assert shared_reaper() is shared_reaper()


def test_a_watched_folder_is_removed_when_the_runner_is_killed(
    runner: Runner, tmp_path: Path
) -> None:
    outputs = tmp_path / "agent-runner-workspace-x"
    (outputs / "sub").mkdir(parents=True)
    (outputs / "command-1.log").write_text("token=unmasked\n", encoding="utf-8")
    kept = tmp_path / "kept"
    kept.mkdir()
    reaper_pid = runner.call(f"folder {outputs}")
    runner.call(f"folder {kept}")
    runner.call(f"unfolder {kept}")
    assert reaper_pid is not None
    runner.kill()
    assert _wait_until(lambda: not outputs.exists())
    assert _exits(reaper_pid)
    assert kept.is_dir()


# Run by a user of its own (root reads any process's files, so as root it runs as nobody): starts
# a reaper with a secret in the environment, waits until the reaper is undumpable (its /proc
# files then belong to root), and prints what it can read of the reaper's environ. It loads
# reaper.py by path (standard library only), so any Python that user may run will do.
SNOOP = """\
import importlib.util, os, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("reaper", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
reaper = module.Reaper()
reaper.watch_folder(Path(sys.argv[2]))
proc = Path(f"/proc/{reaper.pid}")
deadline = time.monotonic() + 10
while proc.joinpath("environ").stat().st_uid != 0 and time.monotonic() < deadline:
    time.sleep(0.01)
try:
    print("READ", proc.joinpath("environ").read_bytes().decode(errors="replace"))
except PermissionError:
    print("DENIED")
reaper.close()
"""


def _python_for_nobody() -> str | None:
    if os.getuid() != 0:
        return sys.executable
    return "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/environ is Linux's")
@pytest.mark.skipif(_python_for_nobody() is None, reason="no Python that user nobody may run")
def test_a_process_of_the_same_user_finds_no_secret_in_the_reapers_environ(tmp_path: Path) -> None:
    secret = "sk-reaper-environ-secret-0123456789"
    script = REPO / "runner" / "workspace" / "sandbox" / "reaper.py"
    ran = subprocess.run(
        [str(_python_for_nobody()), "-c", SNOOP, str(script), str(tmp_path / "folder")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": os.defpath, "OPENAI_API_KEY": secret},
        user=65534 if os.getuid() == 0 else None,
        cwd="/",
    )
    assert ran.returncode == 0, ran.stderr
    assert secret not in ran.stdout
    assert ran.stdout.strip() == "DENIED"  # undumpable: not even its empty environment is read
