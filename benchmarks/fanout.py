"""Fan-out under a rate limit (issue 19): 32 tasks at `--jobs 32` against a server that takes 8.

The server (`tests.fakes.rate_limited.RateLimitedServer`) answers at most 8 requests at once,
each after 200 ms, and every request beyond those with a 429 and `retry-after: 1`. The run is
made twice: with the shared limiter (the default) and without it (`retry.shared_limiter: false`,
through `AGENT_RUNNER_RETRY__SHARED_LIMITER=false`, so that each task backs off alone).

Reported: requests sent, 429s received, and the time from the first request to the process's
exit, against an ideal schedule that keeps the server's 8 slots busy from the first request to
the last: requests x latency / 8.

    .venv/bin/python -m benchmarks.fanout [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.figures import REPO, Bench, Row, read_only_suite
from tests.fakes.model_server import turns_then_done
from tests.fakes.rate_limited import RateLimitedServer

__all__ = ["fanout_429"]


def _run(
    scratch: Path, tasks: int, turns: int, latency: float, slots: int, *, shared: bool
) -> dict[str, Any]:
    with RateLimitedServer(
        script=turns_then_done(turns), max_concurrent=slots, retry_after="1", latency_s=latency
    ) as server:
        name = "shared" if shared else "alone"
        suite = scratch / f"fanout-{name}.yaml"
        suite.write_text(read_only_suite("f", tasks, turns), encoding="utf-8")
        (scratch / "ws").mkdir(exist_ok=True)
        (scratch / "ws" / "notes.txt").write_text("benchmark notes\n", encoding="utf-8")
        keep = ("PATH", "HOME", "LANG", "TMPDIR")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update(
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="sk-bench",
            XDG_CONFIG_HOME=str(scratch / "xdg"),
            PYTHONPATH=str(REPO),
            AGENT_RUNNER_RETRY__SHARED_LIMITER="true" if shared else "false",
        )
        argv = [sys.executable, "-m", "runner", "run", str(suite), "--model", "openai:gpt-4.1"]
        argv += ["--jobs", str(tasks), "--out", str(scratch / f"out-{name}"), "-q"]
        done = subprocess.run(
            argv, cwd=scratch, env=env, capture_output=True, text=True, timeout=900, check=False
        )
        ended = time.monotonic()
        arrivals = server.arrivals
    summary = scratch / f"out-{name}" / "summary.json"
    if not summary.is_file():
        raise RuntimeError(f"fan-out run ({name}) exited {done.returncode}:\n{done.stderr[-3000:]}")
    statuses = [t["status"] for t in json.loads(summary.read_text(encoding="utf-8"))["tasks"]]
    return {
        "exit_code": done.returncode,
        "failed_tasks": sum(1 for status in statuses if status != "passed"),
        "requests": len(arrivals),
        "rate_limited": sum(1 for a in arrivals if a.limited),
        "first_request_to_exit_s": ended - arrivals[0].t,
    }


def fanout_429(bench: Bench) -> list[Row]:
    """32 tasks x 10 turns at 200 ms, 8 requests at once: with and without the shared limiter."""
    tasks, turns, latency, slots = (4, 1, 0.05, 2) if bench.quick else (32, 10, 0.2, 8)
    runs = {
        shared: _run(bench.scratch, tasks, turns, latency, slots, shared=shared)
        for shared in (True, False)
    }
    ideal = tasks * (turns + 1) * latency / slots
    bench.raw["fanout_429"] = {
        "tasks": tasks,
        "turns": turns,
        "latency_s": latency,
        "server_slots": slots,
        "ideal_s": ideal,
        "shared": runs[True],
        "alone": runs[False],
    }
    rows = []
    for shared, run in runs.items():
        per_task = run["rate_limited"] / tasks
        ratio = run["first_request_to_exit_s"] / ideal
        label = "shared limiter" if shared else "each task alone (retry.shared_limiter: false)"
        holds = ratio <= 1.2 and per_task <= 1 if shared and not bench.quick else None
        rows.append(
            Row(
                f"fan-out under 429s, {tasks} tasks x {turns} turns, {slots} at once: {label}",
                run["first_request_to_exit_s"],
                ideal,
                "s",
                "<= 1.2x ideal, <= 1 429/task" if shared else "",
                holds,
                f"{run['requests']} requests, {run['rate_limited']} 429s ({per_task:.2f} per "
                f"task), {run['failed_tasks']} tasks failed; floor: ideal schedule, "
                f"{tasks * (turns + 1)} requests x {latency * 1000:g} ms / {slots}",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fanout", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    from benchmarks.__main__ import table

    with tempfile.TemporaryDirectory(prefix="bench-fanout-") as tmp:
        bench = Bench(server=None, scratch=Path(tmp), quick=args.quick, reps=1)  # type: ignore[arg-type]
        rows = fanout_429(bench)
    print(table(rows))
    print(bench.raw["fanout_429"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
