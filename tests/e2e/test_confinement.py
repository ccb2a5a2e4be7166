"""Confinement that tells the truth (DESIGN 18), attacked through the CLI.

A task's commands try what a hostile repository or model would: remount `/` read-write and write
beside the workdir (as root: the default in containers), read their capabilities, connect to a
loopback listener, see a process outside the sandbox, and reach unix sockets in `/tmp` and
beside the workdir. The record (`enforced`, `missing`) must say exactly what held. Then the
smaller holes: a guard hook that writes to `/tmp`, a symlinked skill folder, and the sandbox's
private folders after `kill -9` of the runner.
"""

from __future__ import annotations

import os
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.workspace import probe
from tests.e2e.conftest import (
    Scenario,
    complete,
    log_schema_errors,
    run_all,
    start,
    tool_reply,
    wait_until,
)

ARGS = ("run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT")


def _works(backend: str) -> str | None:
    found = probe(backend)
    return None if found.backend == backend else found.reason


BACKENDS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            (why := _works(name)) is not None, reason=f"{name} does not work here: {why}"
        ),
    )
    for name in ("bwrap", "landlock")
]
ANY_BACKEND = pytest.mark.skipif(
    _works("bwrap") is not None and _works("landlock") is not None,
    reason="no sandbox backend works here",
)


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[tuple[int, Path, Path]]:
    """A TCP listener on 127.0.0.1, a unix socket in /tmp itself (where an ssh-agent's lives)
    and one beside the workdir `run/w`; yields the port and the two socket paths."""
    in_tmp = Path(tempfile.mkdtemp(prefix="ar-sock-", dir="/tmp"))
    beside = tmp_path / "run"
    beside.mkdir()
    sockets = [socket.socket(socket.AF_INET), *(socket.socket(socket.AF_UNIX) for _ in "ab")]
    try:
        sockets[0].bind(("127.0.0.1", 0))
        sockets[1].bind(str(in_tmp / "agent.sock"))
        sockets[2].bind(str(beside / "agent.sock"))
        for server in sockets:
            server.listen(8)
        yield sockets[0].getsockname()[1], in_tmp / "agent.sock", beside / "agent.sock"
    finally:
        for server in sockets:
            server.close()
        (in_tmp / "agent.sock").unlink(missing_ok=True)
        in_tmp.rmdir()


def _connect(label: str, family: str, address: str) -> str:
    code = (
        f"import socket; s = socket.socket(socket.{family}); s.settimeout(5); "
        f"s.connect({address}); print('CONNECTED-{label}')"
    )
    return f'python3 -c "{code}" 2>&1 | tail -1'


def _attacks(root: Path, port: int, in_tmp: Path, beside: Path) -> list[str]:
    return [
        "grep -E '^Cap(Eff|Prm)' /proc/self/status",
        f"mount -o remount,rw / 2>/dev/null && echo REMOUNTED; echo x > {root}/outside.txt",
        _connect("TCP", "AF_INET", f"('127.0.0.1', {port})"),
        # The test's own process (not a name: under pytest-xdist a worker's command line has
        # no "pytest" in it) is outside the sandbox: seeing it is seeing the runner's side.
        f"test -r /proc/{os.getpid()}/cmdline && cat /proc/{os.getpid()}/cmdline >/dev/null"
        " && echo SEEN-PID; echo",
        _connect("TMP", "AF_UNIX", repr(str(in_tmp))),
        _connect("BESIDE", "AF_UNIX", repr(str(beside))),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_record_names_what_a_command_can_actually_do(
    tmp_path: Path, listeners: tuple[int, Path, Path], backend: str
) -> None:
    root = tmp_path / "run"
    port, in_tmp, beside = listeners
    steps = [tool_reply("execute_command", command=c) for c in _attacks(root, port, in_tmp, beside)]
    scenario = Scenario(
        task={"sandbox": {"mode": "auto"}},
        steps=[*steps, complete()],
        args=[*ARGS, "--sandbox-backend", backend],
    )
    done = run_all({"run": scenario}, tmp_path)["run"]
    assert done.code == 0, done.explain()
    caps, fs, net, pid, unix_tmp, unix_beside = [e["result"] for e in done.events("tool_call")][:6]
    record = done.task()["sandbox"]
    did = {
        "caps": "CapEff:\t0000000000000000" not in caps or "CapPrm:\t0000000000000000" not in caps,
        "fs": "REMOUNTED" in fs or (root / "outside.txt").exists(),
        "net": "CONNECTED-TCP" in net,
        "pid": "SEEN-PID" in pid,
        "sockets": "CONNECTED-TMP" in unix_tmp or "CONNECTED-BESIDE" in unix_beside,
    }
    # Whatever else a backend lacks, none lets root remount /, keep capabilities or reach a
    # unix socket outside the workdir.
    assert not did["fs"] and not did["caps"] and not did["sockets"], (caps, fs, unix_tmp)
    held = sorted(name for name, done_it in did.items() if not done_it)
    assert sorted(record["enforced"]) == held, (record, did)
    assert sorted(record["missing"]) == sorted(set(did) - set(held)), (record, did)
    if backend == "bwrap":
        assert record["missing"] == [] and not any(did.values()), did
    assert log_schema_errors(done.log().path) == []


GUARD = """\
#!/bin/sh
# A guard that keeps the event in /tmp (as many do) and blocks any command naming forbidden.txt.
cat > /tmp/guard-event.json || exit 1
if grep -q forbidden /tmp/guard-event.json; then
  echo "forbidden.txt is off limits (TMPDIR=$TMPDIR)" >&2
  exit 2
fi
"""


@ANY_BACKEND
def test_a_guard_hook_that_writes_to_tmp_still_blocks_under_the_sandbox(tmp_path: Path) -> None:
    scenario = Scenario(
        task={
            "sandbox": {"mode": "auto"},
            "hooks": {"pre_tool": [{"match": ["execute_command"], "run": "sh guard.sh"}]},
        },
        files={"guard.sh": GUARD},
        steps=[tool_reply("execute_command", command="echo x > forbidden.txt"), complete()],
    )
    done = run_all({"run": scenario}, tmp_path)["run"]
    assert done.code == 0, done.explain()
    assert not (done.root / "w" / "forbidden.txt").exists()  # on main the guard failed open
    (result,) = [e["result"] for e in done.events("tool_call")][:1]
    assert "off limits" in result and "agent-runner-sandbox-" in result, result


def test_a_symlinked_skill_folder_loses_that_skill_only(tmp_path: Path) -> None:
    skill = "---\nname: {0}\ndescription: Does {0}.\n---\nBody of {0}.\n"
    outside = tmp_path / "elsewhere" / "evil"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text(skill.format("evil"), encoding="utf-8")
    scenario = Scenario(
        task={"sandbox": {"mode": "off"}},
        files={".agents/skills/good/SKILL.md": skill.format("good")},
        steps=[complete()],
    )
    root = tmp_path / "run"
    (root / "w" / ".agents" / "skills").mkdir(parents=True)
    (root / "w" / ".agents" / "skills" / "evil").symlink_to(outside)
    done = start(scenario, root).wait()
    assert done.code == 0, done.explain()  # on main: exit 2, whatever the task
    assert "skill skipped" in done.stdout + done.stderr and "evil" in done.stdout + done.stderr
    system = done.log().header["system_prompt"]
    assert "Does good." in system and "Does evil." not in system
    assert any("skill skipped" in w["message"] for w in done.events("warning"))


@ANY_BACKEND
def test_the_sandboxs_private_folders_are_removed_after_kill_9(tmp_path: Path) -> None:
    runner_tmp = tmp_path / "runner-tmp"
    runner_tmp.mkdir()
    scenario = Scenario(
        task={"sandbox": {"mode": "auto"}},
        steps=[tool_reply("execute_command", command="touch started.txt; sleep 120"), complete()],
        env={"TMPDIR": str(runner_tmp)},
    )
    run = start(scenario, tmp_path / "run")
    try:
        wait_until((run.root / "w" / "started.txt").exists, 60, "the command to start")
        assert list(runner_tmp.glob("agent-runner-sandbox-*")), "no private folder was made"
        run.process.send_signal(signal.SIGKILL)
        run.process.wait(timeout=30)
        wait_until(
            lambda: not list(runner_tmp.glob("agent-runner-sandbox-*")),
            10,
            "the reaper to remove the sandbox's private folders",
        )
    finally:
        run.process.kill()
        run.process.wait()
        run.server.stop()
