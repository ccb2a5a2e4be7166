"""A hostile workdir against the real CLI: FIFOs, backtracking regexes, huge outputs, hard links,
nested .git folders, a SIGKILL mid-command, and a run whose event loop is stuck when SIGTERM comes.

Each case is one `agent-runner run` in a subprocess against the fake model server, with scripted
replies; they all run at once. A freeze shows as the process outliving RUN_TIMEOUT_S.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import (
    API_KEY,
    MODEL,
    RUN_TIMEOUT_S,
    Done,
    Scenario,
    clean_env,
    complete,
    kill,
    prepare,
    start,
    tool_reply,
    wait_until,
)
from tests.fakes.model_server import FakeModelServer, fault, reply

CLAUDE = "anthropic:claude-sonnet-4-5"
OUTPUT_BYTES = 300_000_000
"""What one command prints in the memory case: far over the output cap."""
MAX_RSS_MB = 250
"""Generous bound on the runner's peak memory while it reads OUTPUT_BYTES (it took 2x them)."""


def _tool_results(done: Done, name: str | None = None) -> list[dict[str, Any]]:
    records = done.logs()
    record = next(r for r in records if name is None or r.header["task"]["name"] == name)
    return done.events("tool_call", record)


def _suite(*tasks: dict[str, Any]) -> str:
    return yaml.safe_dump({"tasks": list(tasks)}, sort_keys=False)


@pytest.fixture(scope="module")
def fifo_run(module_dir: Path) -> Done:
    """Two tasks at once (`--jobs 2`), each on its own server: one meets a FIFO, one just works."""
    first = FakeModelServer(
        [
            tool_reply("execute_command", command="mkfifo fifo"),
            tool_reply("read_file", path="fifo"),
            tool_reply("write_to_file", path="fifo", content="x"),
            tool_reply("replace_in_file", path="fifo", search="a", replace="b"),
            complete("refused"),
        ]
    ).start()
    second = FakeModelServer(
        [tool_reply("execute_command", command="echo other"), complete("other done")]
    ).start()
    task = {"prompt": "Do it."}
    # Each its own workdir: two tasks that may write may not share one under --jobs 2.
    (module_dir / "fifo" / "w2").mkdir(parents=True)
    scenario = Scenario(
        task=_suite(
            {"name": "fifo", "model": MODEL, "workdir": "w", **task},
            {"name": "other", "model": CLAUDE, "workdir": "w2", **task},
        ),
        args=["run", "t.yaml", "--out", "OUT", "--jobs", "2"],
        env={"ANTHROPIC_BASE_URL": second.anthropic_base_url, "ANTHROPIC_API_KEY": API_KEY},
    )
    try:
        return start(scenario, module_dir / "fifo", first).wait()
    finally:
        first.stop()
        second.stop()


def test_a_fifo_is_refused_and_freezes_neither_task(fifo_run: Done) -> None:
    assert fifo_run.code == 0, fifo_run.explain()
    assert {t["name"]: t["status"] for t in fifo_run.summary()["tasks"]} == {
        "fifo": "passed",
        "other": "passed",
    }
    read, write, replace = _tool_results(fifo_run, "fifo")[1:]
    assert read["is_error"] and "not a regular file" in read["result"]
    assert write["is_error"] and "only regular files" in write["result"]
    assert replace["is_error"]


@pytest.fixture(scope="module")
def regex_run(module_dir: Path) -> Done:
    """search_files with a backtracking regex, on the Python backend (no rg on PATH)."""
    empty = module_dir / "no-rg-bin"
    empty.mkdir(exist_ok=True)
    scenario = Scenario(
        task={"limits": {"tool_timeout": "3s"}},
        files={"line.txt": "a" * 60 + "!\n"},
        steps=[tool_reply("search_files", path=".", regex=r"^(\w+\s?)+$"), complete()],
        env={"PATH": str(empty)},
    )
    server = FakeModelServer(scenario.steps).start()
    try:
        return start(scenario, module_dir / "regex", server).wait()
    finally:
        server.stop()


def test_a_backtracking_regex_times_out_like_any_tool_call(regex_run: Done) -> None:
    assert regex_run.code == 0, regex_run.explain()
    (search,) = _tool_results(regex_run)
    assert search["is_error"] and "timed out" in search["result"]


@pytest.fixture(scope="module")
def output_run(module_dir: Path) -> tuple[str, int]:
    """A command prints OUTPUT_BYTES; the result the model got, and the runner's own peak RSS
    (KiB, VmHWM) read while it waits for the next reply, which never comes."""
    scenario = Scenario(
        task={},
        steps=[
            tool_reply("execute_command", command=f"head -c {OUTPUT_BYTES} /dev/zero | tr '\\0' y"),
            fault("stall"),
        ],
    )
    server = FakeModelServer(scenario.steps).start()
    run = start(scenario, module_dir / "output", server)
    try:
        assert server.wait_for_stall(RUN_TIMEOUT_S * 2), (
            f"the runner never sent the result: {run.explain()}"
        )
        status = Path(f"/proc/{run.pid}/status").read_text(encoding="utf-8")
        peak = int(
            next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]
        )
        return json.dumps(server.requests[-1].body), peak
    finally:
        kill(run.process)
        server.stop()


def test_a_huge_command_output_is_streamed_with_bounded_memory(
    output_run: tuple[str, int],
) -> None:
    sent, max_rss_kib = output_run
    assert max_rss_kib < MAX_RSS_MB * 1024, f"peak RSS {max_rss_kib // 1024} MB"
    assert "exit code 0" in sent
    assert f"first 4000000 bytes and its end (of {OUTPUT_BYTES} bytes)" in sent


@pytest.fixture(scope="module")
def links_run(module_dir: Path) -> Done:
    """A hard link to a file outside the workdir, and writes into a nested .git."""
    root = module_dir / "links"
    (root / "w" / "sub" / ".git" / "hooks").mkdir(parents=True)
    (root / "outside.txt").write_text("outside-secret-value\n", encoding="utf-8")
    os.link(root / "outside.txt", root / "w" / "hard.txt")
    scenario = Scenario(
        task={},
        steps=[
            tool_reply("read_file", path="hard.txt"),
            tool_reply("write_to_file", path="sub/.git/hooks/post-checkout", content="#!/bin/sh"),
            tool_reply("write_to_file", path="wt/.git", content="gitdir: /tmp/elsewhere"),
            complete(),
        ],
    )
    server = FakeModelServer(scenario.steps).start()
    try:
        return start(scenario, root, server).wait()
    finally:
        server.stop()


def test_a_hard_link_to_a_file_outside_is_not_read(links_run: Done) -> None:
    assert links_run.code == 0, links_run.explain()
    read = _tool_results(links_run)[0]
    assert read["is_error"] and "hard links" in read["result"]
    assert "outside-secret-value" not in read["result"]


def test_writes_into_a_nested_git_folder_or_gitfile_are_refused(links_run: Done) -> None:
    hook, gitfile = _tool_results(links_run)[1:]
    assert hook["is_error"] and ".git" in hook["result"]
    assert gitfile["is_error"] and ".git" in gitfile["result"]
    assert not (links_run.root / "w" / "sub" / ".git" / "hooks" / "post-checkout").exists()
    assert not (links_run.root / "w" / "wt").exists()


def test_command_output_folders_go_when_the_runner_is_sigkilled(module_dir: Path) -> None:
    root = module_dir / "sigkill"
    temp = root / "tmp"
    temp.mkdir(parents=True)
    scenario = Scenario(
        task={},
        steps=[tool_reply("execute_command", command="seq 1 30000; touch started; sleep 60")],
        env={"TMPDIR": str(temp)},
    )
    server = FakeModelServer(scenario.steps).start()
    run = start(scenario, root, server)
    try:
        wait_until((root / "w" / "started").exists, RUN_TIMEOUT_S, "the command")
        assert list(temp.glob("agent-runner-workspace-*")), "no output folder to begin with"
        kill(run.process)
        wait_until(
            lambda: not list(temp.glob("agent-runner-workspace-*")),
            RUN_TIMEOUT_S,
            "the reaper to remove the output folder",
        )
    finally:
        kill(run.process)
        server.stop()


def test_sigterm_ends_a_run_whose_loop_is_stuck_with_every_report_written(
    module_dir: Path,
) -> None:
    """The loop blocks writing a transcript to a stdout pipe nobody reads; SIGTERM still ends
    the run, within the grace period, with JUnit and summary.json."""
    root = module_dir / "stuck"
    scenario = Scenario(task={}, steps=[reply("x" * 300_000 + "\n" + complete().text)])
    prepare(scenario, root)
    server = FakeModelServer(scenario.steps).start()
    env = clean_env(
        root,
        {
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": API_KEY,
            "AGENT_RUNNER_SHUTDOWN_GRACE_S": "2",
        },
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "runner", "run", "t.yaml", "--model", MODEL, "--out", "OUT", "-v"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=(root / "stderr.txt").open("wb"),
    )
    try:
        assert process.stdout is not None
        reader = process.stdout.fileno()
        size = fcntl.fcntl(reader, fcntl.F_GETPIPE_SZ)
        # The transcript is one 300 KB write: once half a pipe of it is in, the write (and the
        # event loop making it) waits for a reader that never comes.
        wait_until(lambda: _pending(reader) > size // 2, RUN_TIMEOUT_S, "stdout to fill up")
        process.send_signal(signal.SIGTERM)
        code = process.wait(RUN_TIMEOUT_S)
    finally:
        kill(process)
        server.stop()
    assert code == 143
    assert (root / "OUT" / "junit.xml").is_file()
    summary = (root / "OUT" / "summary.json").read_text(encoding="utf-8")
    assert '"exit_code": 143' in summary


def _pending(fd: int) -> int:
    """Bytes waiting in a pipe."""
    buffer = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buffer)
    return int.from_bytes(buffer, sys.byteorder)
