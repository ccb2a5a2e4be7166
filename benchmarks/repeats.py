"""`--repeat 32 --jobs 32` (DESIGN 22): K samples of a one-turn task at once, against one sample.

The task answers in one model call (attempt_completion) at 200 ms fake latency; both runs are
timed as whole processes (start-up included), so the ratio says what 31 more samples cost on top
of one: ideally nothing but their share of the CPU (target: under 2x one sample's wall time).
"""

from __future__ import annotations

import statistics

from benchmarks.figures import MODELS, Bench, Row
from tests.fakes.model_server import turns_then_done

TASK = (
    "name: once\nworkdir: ws\nprompt: Read notes.txt and report.\n"
    "tools: {deny: [write_to_file, replace_in_file, execute_command]}\n"
)


def repeats(bench: Bench) -> list[Row]:
    """One sample against `--repeat K --jobs K` of the same one-turn task."""
    samples, latency = (4, 0.05) if bench.quick else (32, 0.2)
    path = bench.task_file("repeat", TASK)
    walls: dict[int, list[float]] = {1: [], samples: []}
    for _ in range(bench.reps):
        for k, times in walls.items():
            bench.server.reset(script=turns_then_done(0), latency_s=latency)
            out = bench.scratch / f"out-repeat-{k}"
            _, wall, _ = bench.runner(
                "run", str(path), "--model", MODELS["openai"], "--repeat", str(k),
                "--jobs", str(k), "--out", str(out), "-q",
            )  # fmt: skip
            times.append(wall)
    bench.server.reset(latency_s=0.0)
    one, many = statistics.median(walls[1]), statistics.median(walls[samples])
    bench.raw["repeats"] = {"samples": samples, "latency_s": latency, "wall_s": walls}
    return [
        Row(
            f"--repeat {samples} --jobs {samples} (one-turn task, {latency * 1000:g} ms)",
            many,
            one,
            "s",
            "< 2x one sample" if not bench.quick else "",
            many < 2 * one if not bench.quick else None,
            f"whole process, start-up included; floor: the same task run once ({one:.2f} s)",
        )
    ]
