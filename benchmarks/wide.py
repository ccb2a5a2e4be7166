"""Wide fan-out and memory per concurrent task (issue 19): one suite at `--jobs 1` and `--jobs N`.

- `memory`: 64 tasks x 10 turns at 200 ms latency; peak RSS of `--jobs 64` minus `--jobs 1`,
  divided by 63: what each task running at the same time adds.
- `wide`: 128 tasks x 10 turns at 200 ms latency; `--jobs 1` against `--jobs 128`, each timed from
  its first model request to process exit, as the `--jobs 32` row is.

The peak RSS is the runner process's own `ru_maxrss` (`os.wait4`), so nothing is sampled. The
`--jobs 1` run is the long one (N x 11 x 200 ms of latency alone), so it runs once and the
`--jobs N` run `reps` times (medians).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.figures import MODELS, Bench, Row, bare_concurrent, read_only_suite
from tests.fakes.model_server import turns_then_done

__all__ = ["memory", "wide"]


@dataclass(frozen=True)
class JobsRun:
    """One `agent-runner run --jobs N` of a suite."""

    first_to_exit_s: float
    """From the first model request the server saw to the process's exit."""
    wall_s: float
    """From spawn to exit."""
    peak_rss_mb: float
    """The process's peak RSS (`ru_maxrss`)."""
    requests: int
    """Model requests the server saw."""


def _suite(bench: Bench, tasks: int, turns: int) -> Path:
    return bench.task_file(f"suite-{tasks}", read_only_suite("t", tasks, turns))


def run_jobs(bench: Bench, suite: Path, jobs: int, turns: int, latency_s: float) -> JobsRun:
    """Run the suite at `--jobs jobs` against the fake server; time it and read its peak RSS."""
    bench.server.reset(script=turns_then_done(turns), latency_s=latency_s)
    out = bench.scratch / f"out-{suite.stem}-jobs-{jobs}-{time.monotonic_ns()}"
    argv = [sys.executable, "-m", "runner", "run", str(suite), "--model", MODELS["openai"]]
    argv += ["--jobs", str(jobs), "--out", str(out), "-q"]
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        cwd=bench.scratch,
        env=bench.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    captured: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda n=n, s=s: captured.__setitem__(n, s.read()))
        for n, s in (("out", process.stdout), ("err", process.stderr))
    ]
    for reader in readers:
        reader.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)  # the child's own rusage: its peak RSS
    except BaseException:
        process.kill()
        process.wait()
        raise
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    if process.returncode != 0:
        err = captured.get("err", b"").decode("utf-8", "replace")[-3000:]
        raise RuntimeError(f"--jobs {jobs} exited {process.returncode}:\n{err}")
    arrivals = bench.server.arrivals
    bench.server.reset(latency_s=0.0)
    return JobsRun(
        first_to_exit_s=started + wall - arrivals[0].t,
        wall_s=wall,
        peak_rss_mb=usage.ru_maxrss / 1024,
        requests=len(arrivals),
    )


def _sizes(bench: Bench, tasks: int) -> tuple[int, int, float]:
    return (4, 1, 0.05) if bench.quick else (tasks, 10, 0.2)


_QUICK: dict[tuple[int, int], JobsRun] = {}
"""The quick mode's runs: both figures use the same tiny suite, so `wide` reuses `memory`'s."""


def _runs(
    bench: Bench, suite: Path, jobs: int, turns: int, latency: float, n: int
) -> list[JobsRun]:
    if not bench.quick:
        return [run_jobs(bench, suite, jobs, turns, latency) for _ in range(n)]
    key = (id(bench), jobs)
    if key not in _QUICK:
        _QUICK[key] = run_jobs(bench, suite, jobs, turns, latency)
    return [_QUICK[key]]


def memory(bench: Bench) -> list[Row]:
    """Peak RSS per concurrent task: (`--jobs 64` - `--jobs 1`) / 63."""
    tasks, turns, latency = _sizes(bench, 64)
    suite = _suite(bench, tasks, turns)
    one = _runs(bench, suite, 1, turns, latency, 1)[0]
    many = _runs(bench, suite, tasks, turns, latency, bench.reps)
    peak = statistics.median(r.peak_rss_mb for r in many)
    per_task = (peak - one.peak_rss_mb) / (tasks - 1)
    bench.raw[f"memory.{tasks}"] = {
        "jobs_1": one.__dict__,
        f"jobs_{tasks}": [r.__dict__ for r in many],
    }
    return [
        Row(
            f"memory per concurrent task ({tasks} tasks x {turns} turns, {latency * 1000:g} ms)",
            per_task,
            None,
            "MB",
            "" if bench.quick else "<= 1.5 MB",
            None if bench.quick else per_task <= 1.5,
            f"peak RSS: --jobs {tasks} {peak:.1f} MB, --jobs 1 {one.peak_rss_mb:.1f} MB; "
            f"(difference) / {tasks - 1}",
        )
    ]


def wide(bench: Bench) -> list[Row]:
    """`--jobs 128` against `--jobs 1`, first request to exit."""
    tasks, turns, latency = _sizes(bench, 128)
    suite = _suite(bench, tasks, turns)
    one = _runs(bench, suite, 1, turns, latency, 1)[0]
    many = _runs(bench, suite, tasks, turns, latency, bench.reps)
    phase = statistics.median(r.first_to_exit_s for r in many)
    wall = statistics.median(r.wall_s for r in many)
    speedup = one.first_to_exit_s / phase
    ideal = tasks * (turns + 1) * latency
    bare = statistics.median(bare_concurrent(bench, tasks, turns, latency) for _ in many)
    bench.raw[f"wide.{tasks}"] = {
        "jobs_1": one.__dict__,
        f"jobs_{tasks}": [r.__dict__ for r in many],
        "bare_concurrent_first_request_to_exit_s": bare,
    }
    return [
        Row(
            f"--jobs {tasks} speed-up ({tasks} tasks x {turns} turns, {latency * 1000:g} ms)",
            speedup,
            None,
            "x",
            "" if bench.quick else ">= 90x",
            None if bench.quick else speedup >= 90,
            f"first request to exit: jobs 1 {one.first_to_exit_s:.1f} s, jobs {tasks} "
            f"{phase:.2f} s (latency alone {ideal:.1f} s / {ideal / tasks:.1f} s, so at best "
            f"{tasks}x; the bare SDK, {tasks} loops at once on one client: {bare:.2f} s, so "
            f"{one.first_to_exit_s / bare:.1f}x); whole process: {one.wall_s:.1f} s / "
            f"{wall:.2f} s = {one.wall_s / wall:.1f}x; {many[0].requests} requests",
        )
    ]
