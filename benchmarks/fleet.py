"""The fleet governor (issue 42, DESIGN 25): what it costs per model call, and what it saves.

1. Cost per model call: one task of T read_file turns against the fake model server, run side
   by side with and without `--governor-url` pointing at a local redis-server (with a fleet cap
   and an rpm/tpm limit, so every call makes all four of its store round trips: reserve, admit,
   tokens, settle). The figure is the time between the first and the last model request divided
   by the turns; the floor is the same without a governor.
2. 429s of a 16-shard run: 16 `agent-runner` processes of 3 one-call tasks each against a server
   that takes R requests per W-second sliding window and answers the rest 429 with the
   `retry-after` that frees a place. With the governor (`limits: {rpm: R, window_s: W}`) the
   shards queue at the store; without it each learns the limit from its own 429s.

    .venv/bin/python -m benchmarks.fleet [--quick]      # or: python -m benchmarks --only fleet
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from benchmarks.figures import REPO, Bench, Row
from tests.fakes.fleet_server import FleetModelServer
from tests.fakes.model_server import FINISH, READ_NOTES, Step, fault
from tests.fakes.redis_server import RedisServer

__all__ = ["fleet"]

MODEL = "openai:gpt-4.1"
FIELDS = ("rate_limited", "requests", "failed", "seconds")


def _env(scratch: Path, server: FleetModelServer) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        OPENAI_BASE_URL=server.openai_base_url,
        OPENAI_API_KEY="sk-bench",
        XDG_CONFIG_HOME=str(scratch / "xdg"),
        PYTHONPATH=str(REPO),
    )
    return env


def _governor(url: str | None, **governor: Any) -> str:
    if url is None:
        return ""
    return yaml.safe_dump({"governor": {"url": url, "run": uuid.uuid4().hex, **governor}})


def _per_call(scratch: Path, turns: int, url: str | None) -> float:
    """Seconds per model call of one task of `turns` read_file turns."""
    root = scratch / f"per-call-{uuid.uuid4().hex[:6]}"
    (root / "ws").mkdir(parents=True)
    (root / "ws" / "notes.txt").write_text("benchmark notes\n", encoding="utf-8")
    task = {"name": "t", "workdir": "ws", "prompt": "Read notes.txt again and again (shard0)."}
    (root / "t.yaml").write_text(yaml.safe_dump(task), encoding="utf-8")
    limits = {"openai:*": {"rpm": 1_000_000, "tpm": 1_000_000_000}}
    config = _governor(url, max_cost_usd=10_000, limits=limits)
    (root / "agent-runner.yaml").write_text(config, encoding="utf-8")

    def answer(shard: str, index: int) -> Step:
        return Step(text=READ_NOTES if index < turns else FINISH)

    with FleetModelServer(answer) as server:
        argv = [sys.executable, "-m", "runner", "run", "t.yaml", "--model", MODEL, "-q"]
        argv += ["--out", "out", "--max-turns", str(turns + 5)]
        done = subprocess.run(
            argv,
            cwd=root,
            env=_env(root, server),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        times = [a.at for a in server.arrivals]
    if done.returncode != 0 or len(times) != turns + 1:
        raise RuntimeError(f"per-call run exited {done.returncode}:\n{done.stderr[-3000:]}")
    return (times[-1] - times[0]) / turns


def _store_round_trips(url: str, calls: int) -> float:
    """Seconds per model call of the governor's own work, in process: reserve, admit, tokens,
    settle against the store at `url` (what the runner adds to each call, without the loop)."""
    from runner.fleet import Governor, GovernorSettings, open_store

    limits = {"openai:*": {"rpm": 1_000_000, "tpm": 1_000_000_000}}
    settings = GovernorSettings(url=url, run=uuid.uuid4().hex, limits=limits)  # type: ignore[arg-type]

    async def calls_() -> float:
        governor = Governor(
            settings, open_store(url), url=url, run=settings.run or "", max_cost_usd=1e9
        )
        await governor.reserve(0.01)  # the connection made
        started = time.perf_counter()
        for _ in range(calls):
            ticket = await governor.reserve(0.01)
            admission = await governor.admit("openai", "gpt-4.1", 1000)
            await governor.used(admission, 900)
            await governor.settle(ticket, 0.009)
        elapsed = time.perf_counter() - started
        await governor.aclose()
        return elapsed / calls

    return asyncio.run(calls_())


def _limited_answer(rpm: int, window_s: float) -> Any:
    """A provider's sliding window: at most `rpm` accepted requests per `window_s` seconds."""
    accepted: list[float] = []
    lock = threading.Lock()

    def answer(shard: str, index: int) -> Step:
        now = time.time()
        with lock:
            while accepted and accepted[0] <= now - window_s:
                accepted.pop(0)
            if len(accepted) >= rpm:
                wait = accepted[len(accepted) - rpm] + window_s - now
                return fault("rate_limit", retry_after=str(max(1, math.ceil(wait))))
            accepted.append(now)
        return Step(text=FINISH)

    return answer


def _shards(scratch: Path, shards: int, tasks: int, rpm: int, window_s: float, url: str | None):
    """(429s, requests, failed tasks, seconds) of `shards` processes against the limited fake."""
    base = scratch / f"shards-{'with' if url else 'without'}"
    limits = {"openai:*": {"rpm": rpm, "window_s": window_s}}
    config = _governor(url, limits=limits)
    with FleetModelServer(_limited_answer(rpm, window_s)) as server:
        processes = []
        started = time.monotonic()
        for k in range(shards):
            root = base / f"shard{k}"
            root.mkdir(parents=True)
            suite = {
                "defaults": {"workdir": ".", "extensions": {"workspace": {"enabled": False}}},
                "tasks": [{"name": f"t{i}", "prompt": f"shard{k} task {i}"} for i in range(tasks)],
            }
            (root / "t.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
            (root / "agent-runner.yaml").write_text(config, encoding="utf-8")
            argv = [sys.executable, "-m", "runner", "run", "t.yaml", "--model", MODEL, "-q"]
            processes.append(
                subprocess.Popen(
                    [*argv, "--out", "out"],
                    cwd=root,
                    env=_env(root, server),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for process in processes:
            process.wait(900)
        elapsed = time.monotonic() - started
        arrivals = list(server.arrivals)
    failed = 0
    for k in range(shards):
        summary = json.loads((base / f"shard{k}" / "out" / "summary.json").read_text("utf-8"))
        failed += sum(1 for t in summary["tasks"] if t["status"] != "passed")
    limited = sum(1 for a in arrivals if a.step.fault == "rate_limit")
    return limited, len(arrivals), failed, elapsed


def fleet(bench: Bench) -> list[Row]:
    turns, reps = (10, 1) if bench.quick else (60, bench.reps)
    shards, tasks, rpm, window_s = (4, 2, 4, 2.0) if bench.quick else (16, 3, 16, 3.0)
    with RedisServer(bench.scratch / "redis") as redis:
        plain, governed = [], []
        for _ in range(reps):  # side by side, alternating
            plain.append(_per_call(bench.scratch, turns, None))
            governed.append(_per_call(bench.scratch, turns, redis.url))
        in_process = _store_round_trips(redis.url, 50 if bench.quick else 1000)
        with_gov = _shards(bench.scratch, shards, tasks, rpm, window_s, redis.url)
    without = _shards(bench.scratch, shards, tasks, rpm, window_s, None)
    bench.raw["fleet"] = {
        "per_call_s": {"without": plain, "with": governed, "turns": turns},
        "store_round_trips_per_call_s": in_process,
        "shards": {"shards": shards, "tasks": tasks, "rpm": rpm, "window_s": window_s},
        "with": dict(zip(("rate_limited", "requests", "failed", "seconds"), with_gov, strict=True)),
        "without": dict(
            zip(("rate_limited", "requests", "failed", "seconds"), without, strict=True)
        ),
    }
    per_call, floor = statistics.median(governed), statistics.median(plain)
    rows = [
        Row(
            f"fleet governor: time per model call, local Redis ({turns} turns)",
            per_call,
            floor,
            "s",
            "",
            None,
            f"floor: the same task without a governor; {reps} rep(s), medians; "
            f"+{(per_call - floor) * 1000:.2f} ms a call; the governor's 4 store round trips "
            f"alone, in process: {in_process * 1000:.2f} ms a call",
        )
    ]
    for label, (limited, requests, failed, seconds) in (("with", with_gov), ("without", without)):
        rows.append(
            Row(
                f"fleet: 429s of a {shards}-shard run, {rpm} requests per {window_s:g} s: "
                f"{label} the governor",
                float(limited),
                None,
                "429s",
                "",
                None,
                f"{requests} requests for {shards * tasks} calls, {failed} tasks failed, "
                f"{seconds:.1f} s",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    from benchmarks.__main__ import table

    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        bench = Bench(server=None, scratch=Path(tmp), quick=args.quick, reps=3)  # type: ignore[arg-type]
        rows = fleet(bench)
    print(table(rows))
    print(json.dumps(bench.raw["fleet"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
