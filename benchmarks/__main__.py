"""`python -m benchmarks [--quick] [--out DIR]`: run every figure, write JSON and a markdown table.

See BENCHMARKS.md for what each figure measures and the latest results.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import fanout, figures, wide
from benchmarks.fake_latency import TimedServer
from benchmarks.figures import Bench, Row
from benchmarks.fleet import fleet
from benchmarks.lean_prompt import lean_prompt
from benchmarks.prompt_cache import prompt_cache
from benchmarks.proxy_connect import proxy_connect
from benchmarks.repeats import repeats

SCALE = {"ms": 1000.0}
FIGURES = (
    "per_turn",
    "cold_start",
    "mcp_call",
    "concurrency",
    "long_session",
    "prompt_cache",
    "fanout_429",
    "memory",
    "wide",
    "proxy_connect",
    "repeats",
    "fleet",
    "lean_prompt",
)


def _system_prompt(scratch: Path) -> str:
    found = sorted(scratch.glob("out-*/prompts/*.md"))
    return found[0].read_text(encoding="utf-8") if found else "You are an agent.\n" * 500


def run(bench: Bench, only: list[str], sizes: list[int] | None = None) -> list[Row]:
    rows: list[Row] = []
    sizes = sizes or ([1] if bench.quick else [1, 20, 200])
    if "per_turn" in only:
        for wire in ("openai", "anthropic"):
            for n in sizes:
                for nagle in (False, True):
                    rows += figures.per_turn(bench, wire, n, nagle=nagle)
                    _progress(rows[-1])
    steps = {
        "cold_start": lambda: figures.cold_start(bench),
        "mcp_call": lambda: figures.mcp_call(bench),
        "concurrency": lambda: figures.concurrency(bench),
        "long_session": lambda: figures.long_session(bench, lambda: _system_prompt(bench.scratch)),
        "prompt_cache": lambda: prompt_cache(bench),
        "fanout_429": lambda: fanout.fanout_429(bench),  # its own rate-limited server
        "memory": lambda: wide.memory(bench),
        "wide": lambda: wide.wide(bench),
        "proxy_connect": lambda: proxy_connect(bench),  # DESIGN 19
        "repeats": lambda: repeats(bench),
        "fleet": lambda: fleet(bench),  # a redis-server of its own (DESIGN 25)
        "lean_prompt": lambda: lean_prompt(bench),  # DESIGN 28
    }
    for name, step in steps.items():
        if name in only:
            new = step()
            for row in new:
                _progress(row)
            rows += new
    return rows


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    value *= SCALE.get(unit, 1.0)
    if unit == "B":
        return f"{value:,.0f} B"
    return f"{value:.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def table(rows: list[Row]) -> str:
    lines = [
        "| figure | runner | floor | ratio | target | holds | note |",
        "| --- | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for r in rows:
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else ""
        holds = {True: "yes", False: "**no**", None: ""}[r.holds]
        lines.append(
            f"| {r.figure} | {_fmt(r.runner, r.unit)} | {_fmt(r.floor, r.unit)} | {ratio} "
            f"| {r.target} | {holds} | {r.note} |"
        )
    return "\n".join(lines) + "\n"


def _progress(row: Row) -> None:
    ratio = f" ({row.ratio:.2f}x)" if row.ratio is not None else ""
    print(f"  {row.figure}: {_fmt(row.runner, row.unit)}{ratio}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3; quick 1)")
    parser.add_argument("--only", nargs="+", choices=FIGURES, default=list(FIGURES))
    parser.add_argument("--sizes", nargs="+", type=int, help="per-turn N values (default 1 20 200)")
    parser.add_argument(
        "--baseline", type=Path, help="a folder with another `runner` package to run side by side"
    )
    args = parser.parse_args(argv)
    reps = args.reps or (1 if args.quick else 3)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp, TimedServer() as server:
        bench = Bench(server=server, scratch=Path(tmp), quick=args.quick, reps=reps)
        bench.baseline = args.baseline.resolve() if args.baseline else None
        rows = run(bench, args.only, args.sizes)
    elapsed = time.perf_counter() - started
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    name = "quick" if args.quick else "full"
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "when": stamp,
        "mode": name,
        "reps": reps,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {_cpus()} CPUs",
        "elapsed_s": round(elapsed, 1),
        "rows": [{**r.__dict__, "ratio": r.ratio} for r in rows],
        "samples": bench.raw,
    }
    (args.out / f"{name}.json").write_text(
        json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8"
    )
    md = f"Run {stamp}, `{name}` mode, {reps} rep(s), {elapsed:.0f} s. Medians.\n\n{table(rows)}"
    (args.out / f"{name}.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    raise SystemExit(main())
