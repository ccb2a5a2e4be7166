"""Live progress through the CLI: heartbeats while a task runs, RETRY lines, a line per turn on
a terminal or with -v, and what -q and --output json keep."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    API_KEY,
    NO_WORKSPACE,
    REACH_S,
    RUN_TIMEOUT_S,
    Done,
    Scenario,
    call,
    clean_env,
    complete,
    default_args,
    kill,
    prepare,
    run_all,
    start,
    tool_reply,
    wait_until,
)
from tests.fakes.model_server import FakeModelServer, fault, reply

FAST_BEAT = {"AGENT_RUNNER_PROGRESS_INTERVAL_S": "0.1"}
"""Heartbeats ten times a second: the test waits for them instead of 30 s."""


def heartbeats(text: str, task: str = "t") -> list[str]:
    return [line for line in text.splitlines() if line.split()[:2] == ["RUNNING", task]]


def _stalled_run(root: Path, *args: str) -> Done:
    """The task's one model call stalls until two heartbeat lines are out, then completes."""
    server = FakeModelServer(
        [fault("stall", text=call("attempt_completion", result="done"))]
    ).start()
    try:
        scenario = Scenario(task=NO_WORKSPACE, env=FAST_BEAT, args=default_args(*args))
        run = start(scenario, root, server)
        stream = root / ("stderr.txt" if "json" in args else "stdout.txt")
        try:
            assert server.wait_for_stall(timeout=REACH_S), "the model call never stalled"
            wait_until(
                lambda: len(heartbeats(stream.read_text(encoding="utf-8"))) >= 2,
                timeout=30,
                what="two heartbeat lines while the model call stalls",
            )
        finally:
            server.release()
        return run.wait()
    finally:
        server.stop()


def test_a_task_waiting_on_the_model_prints_heartbeat_lines(tmp_path: Path) -> None:
    done = _stalled_run(tmp_path)
    assert done.code == 0, done.explain()
    beats = heartbeats(done.stdout)
    assert len(beats) >= 2, done.explain()
    # Before the first reply: no turn yet, nothing spent.
    assert "turn=0 tokens=0 cost=$0.0000" in beats[0], beats[0]


def test_the_heartbeat_says_what_is_in_flight_and_the_tokens_streamed_so_far(
    tmp_path: Path,
) -> None:
    # A slow reply: each piece of the stream waits until the test has seen a heartbeat that
    # counts the pieces before it (DESIGN 23: the heartbeat said `turn=0 tokens=0` for minutes).
    text = call("attempt_completion", result="x" * 600)
    server = FakeModelServer([fault("drip", text=text, chunks=4)]).start()
    seen: list[int] = []
    try:
        run = start(Scenario(task=NO_WORKSPACE, env=FAST_BEAT), tmp_path, server)
        try:
            assert server.wait_for_stall(timeout=REACH_S), "the model call never started streaming"
            for _ in range(3):
                server.drip()
                wait_until(
                    lambda: _streamed(_stdout(tmp_path)) > (seen[-1] if seen else 0),
                    timeout=30,
                    what="a heartbeat counting more streamed tokens",
                )
                seen.append(_streamed(_stdout(tmp_path)))
        finally:
            server.release()
        done = run.wait()
    finally:
        server.stop()
    assert done.code == 0, done.explain()
    assert seen == sorted(seen) and len(set(seen)) == 3, seen
    beat = next(line for line in heartbeats(done.stdout) if "tokens streamed" in line)
    assert "in flight: model call" in beat, beat


def _stdout(root: Path) -> str:
    return (root / "stdout.txt").read_text(encoding="utf-8", errors="replace")


def _streamed(stdout: str) -> int:
    """The tokens streamed that the latest heartbeat counts (0 before any)."""
    counts = [
        int(line.rsplit("~", 1)[1].split()[0].replace(",", ""))
        for line in heartbeats(stdout)
        if "tokens streamed" in line
    ]
    return counts[-1] if counts else 0


def test_under_output_json_heartbeats_go_to_stderr_and_stdout_stays_one_document(
    tmp_path: Path,
) -> None:
    done = _stalled_run(tmp_path, "--output", "json")
    assert done.code == 0, done.explain()
    assert json.loads(done.stdout)["passed"] == 1
    assert len(heartbeats(done.stderr)) >= 2, done.explain()


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(
        {
            "retried": Scenario(
                task=NO_WORKSPACE,
                steps=[fault("rate_limit", retry_after="0.05"), fault("server_error"), complete()],
            ),
            "verbose": Scenario(
                task={},
                files={"a.txt": "a"},
                steps=[tool_reply("list_files", path="."), complete()],
                args=default_args("-v"),
            ),
            "quiet": Scenario(
                task={**NO_WORKSPACE, "success": {"expect": {"regex": "^never$"}}},
                steps=[fault("server_error"), complete("something else")],
                args=default_args("-q"),
            ),
        },
        module_dir,
    )


def test_every_retry_prints_its_reason_and_wait(runs: dict[str, Done]) -> None:
    done = runs["retried"]
    assert done.code == 0, done.explain()
    retries = [line for line in done.stdout.splitlines() if line.startswith("RETRY")]
    assert len(retries) == 2, done.explain()
    assert "t  turn 1 attempt 1 (HTTP 429)" in retries[0] and "waiting 0.1s" in retries[0]
    assert "attempt 2 (HTTP 500)" in retries[1] and "waiting" in retries[1]
    # The console sees the events; the session log still gets every one of them.
    assert [e["status"] for e in done.events("retry")] == [429, 500]


def test_with_v_a_line_per_turn_shows_tokens_cost_and_the_last_tool(
    runs: dict[str, Done],
) -> None:
    done = runs["verbose"]
    assert done.code == 0, done.explain()
    turns = [line for line in done.stdout.splitlines() if line.startswith("TURN")]
    assert len(turns) == 2, done.explain()
    assert "t  turn=1 tokens=" in turns[0] and "last tool" not in turns[0]
    assert "turn=2" in turns[1] and turns[1].endswith("last tool=list_files")
    assert len(done.events("model_call")) == 2
    assert [e["tool"] for e in done.events("tool_call")] == ["list_files"]


def test_without_a_terminal_or_v_there_is_no_line_per_turn(runs: dict[str, Done]) -> None:
    assert not [line for line in runs["retried"].stdout.splitlines() if line.startswith("TURN")]


def test_q_prints_no_progress_but_still_why_a_task_failed(runs: dict[str, Done]) -> None:
    done = runs["quiet"]
    assert done.code == 1, done.explain()
    lines = done.stdout.splitlines()
    (failed,) = [line for line in lines if line.startswith("FAIL")]
    assert "(expect)" in failed or "regex" in failed, failed
    assert not [line for line in lines if line.startswith(("START", "RETRY", "RUNNING"))]


def test_on_a_terminal_each_turn_gets_a_line(tmp_path: Path) -> None:
    """stdout is a real pseudo-terminal: TURN lines without -v."""
    scenario = Scenario(task=NO_WORKSPACE)
    prepare(scenario, tmp_path)
    with FakeModelServer([reply("thinking"), complete()]) as server:
        env = clean_env(
            tmp_path, {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": API_KEY}
        )
        leader, follower = pty.openpty()
        process = subprocess.Popen(
            [sys.executable, "-m", "runner", *default_args()],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.DEVNULL,
        )
        os.close(follower)
        chunks: list[bytes] = []
        try:
            while True:  # read until the terminal closes (EIO once the process exits)
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            code = process.wait(RUN_TIMEOUT_S)
        finally:
            kill(process)
            os.close(leader)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert code == 0, text
    turns = [line for line in text.splitlines() if line.startswith("TURN")]
    assert len(turns) == 2, text
