"""Load: 64 concurrent tasks of 20 turns, and one 2,000-turn session, through the CLI.

No error, no leaked file descriptor or process, and a bounded peak RSS: leak guards, not
benchmarks. While a runner runs, a sampler reads its /proc entry (open descriptors, VmHWM).
Each turn's reply is a malformed attempt_completion: a precise error goes back to the model and
the session goes on, with no MCP server to start, so the runner itself is what is measured.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    assert_no_process_left,
    default_args,
    log_schema_errors,
    start,
)
from tests.fakes.model_server import reply

pytestmark = pytest.mark.slow


BUSY = reply("<attempt_completion>\n<status>maybe</status>\n</attempt_completion>")
"""A turn that is neither silent nor the end: the call is refused with a usage message."""
RSS_BOUND_KB = 1024 * 1024
"""1 GB: far above what the runner needs; a leak of a context per turn would pass it."""
SMALL_WINDOW = "models:\n  gpt-4.1: {context_window: 6000}\n"
"""A small window, so a long session compacts as a real one would instead of growing forever."""


@dataclass
class Samples:
    """What the sampler saw of a process: descriptor counts in order, and the last VmHWM."""

    fds: list[int] = field(default_factory=list)
    peak_rss_kb: int = 0


def _sample(pid: int, samples: Samples) -> None:
    proc = Path(f"/proc/{pid}")
    try:
        fds = sum(1 for _ in (proc / "fd").iterdir())
        status = (proc / "status").read_text(encoding="utf-8")
    except OSError:
        return  # exited between two reads
    samples.fds.append(fds)
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            samples.peak_rss_kb = int(line.split()[1])


@contextmanager
def sampling(pid: int, every_s: float = 0.05) -> Iterator[Samples]:
    samples = Samples()
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            _sample(pid, samples)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join()


OPEN_AFTER_MAIN = """
import os, sys
from runner.cli import main
code = main()
targets = []
for fd in os.listdir("/proc/self/fd"):
    try:
        targets.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass  # the listing's own descriptor, closed by now
with open("open-after-main.txt", "w", encoding="utf-8") as out:
    out.write("\\n".join(sorted(targets)))
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
"""
"""Runs the CLI as `agent-runner` does (`cli.entry`: main, then a bare exit), and writes what is
still open once `main` has returned, where the sampler could only guess at the last moment."""


def run_sampled(scenario: Scenario, root: Path, timeout: float) -> tuple[Done, Samples]:
    started = start(scenario, root, launcher=("-c", OPEN_AFTER_MAIN))
    try:
        with sampling(started.pid) as samples:
            done = started.wait(timeout)
    finally:
        started.server.stop()
    return done, samples


def assert_clean(done: Done, samples: Samples, tasks: int, turns: int) -> None:
    """Every task stopped by its turn limit after exactly `turns` turns, and nothing leaked."""
    assert done.code == 5, done.explain()
    entries = done.summary()["tasks"]
    assert len(entries) == tasks
    # `turns` turns, then the one tools-off request for a final report (DESIGN 12).
    assert {(t["status"], t["kind"], t["turns"]) for t in entries} == {
        ("budget_exceeded", "turns", turns + 1)
    }
    assert "Traceback" not in done.stderr
    for record in done.logs():
        assert record.end is not None and record.end["status"] == "budget_exceeded"
    assert samples.fds, "the sampler saw the runner"
    assert samples.peak_rss_kb < RSS_BOUND_KB, samples.peak_rss_kb
    assert_no_process_left(done.root)


def test_64_concurrent_tasks_of_20_turns_end_cleanly_without_leaks(tmp_path: Path) -> None:
    tasks = [{"name": f"t{i:02d}", "prompt": f"Task {i}."} for i in range(64)]
    scenario = Scenario(
        task={
            "defaults": {**NO_WORKSPACE, "workdir": "w", "limits": {"max_turns": 20}},
            "tasks": tasks,
        },
        default=BUSY,
        args=default_args("--jobs", "64"),
    )
    done, samples = run_sampled(scenario, tmp_path, timeout=120)
    assert_clean(done, samples, tasks=64, turns=20)
    assert len(done.requests) == 64 * (20 + 1)  # each task's turns and its final-report request
    # 64 open logs and connections at the peak; once the run is over they are closed again.
    assert max(samples.fds) < 64 * 4 + 50, max(samples.fds)
    still_open = open_after_main(done)
    assert [f for f in still_open if f.startswith("socket:") or "/OUT/" in f] == [], still_open
    assert len(still_open) < 10, still_open  # the standard streams, and little else
    path = done.logs()[0].path
    assert log_schema_errors(path) == []


def open_after_main(done: Done) -> list[str]:
    """What the runner process still held open after `main` returned (targets of /proc fds)."""
    return (done.root / "open-after-main.txt").read_text(encoding="utf-8").splitlines()


def test_a_2000_turn_session_ends_cleanly_with_flat_descriptors_and_bounded_memory(
    tmp_path: Path,
) -> None:
    scenario = Scenario(
        task={**NO_WORKSPACE, "limits": {"max_turns": 2000}},
        default=BUSY,
        extra_files={"agent-runner.yaml": SMALL_WINDOW},
    )
    done, samples = run_sampled(scenario, tmp_path, timeout=120)
    assert_clean(done, samples, tasks=1, turns=2000)
    assert done.events("compaction"), "the context was compacted rather than grown"
    # A descriptor leaked per turn (or per compaction) would show as hundreds by the end.
    assert max(samples.fds) < 30, sorted(set(samples.fds))
    assert log_schema_errors(done.log().path) == []
