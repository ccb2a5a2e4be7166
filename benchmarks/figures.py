"""The five figures of DESIGN section 11, each measured side by side with its floor.

Every function takes a `Bench` (the fake server, a scratch folder, repetition counts) and returns
a list of `Row`s: a runner figure, its floor, their ratio and the target it is held to.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.fake_latency import Arrival, TimedServer
from tests.fakes.model_server import READ_NOTES, Step, turns_then_done

__all__ = ["Bench", "Row"]

REPO = Path(__file__).resolve().parents[1]
MODELS = {"openai": "openai:gpt-4.1", "anthropic": "anthropic:claude-sonnet-4-5"}


@dataclass
class Row:
    """One line of the results table."""

    figure: str
    runner: float
    floor: float | None
    unit: str
    target: str = ""
    holds: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.runner / self.floor if self.floor else None


@dataclass
class Bench:
    """What every figure shares."""

    server: TimedServer
    scratch: Path
    quick: bool
    reps: int
    raw: dict[str, Any] = field(default_factory=dict)
    """Every sample, for the JSON file."""
    baseline: Path | None = None
    """A folder holding another `runner` package (e.g. `git archive main runner`): the per-turn
    figures also run it, side by side, as the "before" of a change."""

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "notes.txt").write_text("benchmark notes\n", encoding="utf-8")

    @property
    def workdir(self) -> Path:
        return self.scratch / "ws"

    def env(self, root: Path = REPO) -> dict[str, str]:
        keep = ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update(
            OPENAI_BASE_URL=self.server.openai_base_url,
            OPENAI_API_KEY="sk-bench",
            ANTHROPIC_BASE_URL=self.server.anthropic_base_url,
            ANTHROPIC_API_KEY="sk-ant-bench",
            XDG_CONFIG_HOME=str(self.scratch / "xdg"),  # no user config leaks in
            PYTHONPATH=os.pathsep.join(dict.fromkeys((str(root), str(REPO)))),
        )
        return env

    def task_file(self, name: str, body: str) -> Path:
        path = self.scratch / f"{name}.yaml"
        path.write_text(body, encoding="utf-8")
        return path

    def spawn(
        self,
        argv: list[str],
        *,
        watch: bool = False,
        cwd: Path | None = None,
        root: Path = REPO,
    ) -> tuple[float, float, str]:
        """Run a process to its end: (perf_counter at spawn, wall seconds, stdout)."""
        started = time.perf_counter()
        process = subprocess.Popen(
            argv,
            cwd=cwd or self.scratch,
            env=self.env(root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if watch:
            self.server.watch(process.pid)
        try:
            out, err = process.communicate(timeout=600)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            self.server.watch(None)
        wall = time.perf_counter() - started
        if process.returncode not in (0, 5):  # 5: a turn limit ended a long session on purpose
            raise RuntimeError(f"{argv[:5]} exited {process.returncode}:\n{out}\n{err[-3000:]}")
        return started, wall, out

    def runner(
        self, *args: str, watch: bool = False, root: Path = REPO
    ) -> tuple[float, float, str]:
        return self.spawn([sys.executable, "-m", "runner", *args], watch=watch, root=root)

    def bare(self, *args: str, watch: bool = False) -> tuple[float, float, str]:
        return self.spawn([sys.executable, "-m", "benchmarks.bare_loop", *args], watch=watch)


def _turns(arrivals: list[Arrival]) -> list[Arrival]:
    return [a for a in arrivals if not a.summary]


def _per_turn(arrivals: list[Arrival]) -> float:
    turns = _turns(arrivals)
    return (turns[-1].t - turns[0].t) / max(1, len(turns) - 1)


def _task(n: int) -> str:
    return (
        f"name: turns-{n}\nworkdir: ws\nprompt: Read notes.txt and report.\n"
        f"limits: {{max_turns: {n + 5}}}\n"
    )


def per_turn(bench: Bench, wire: str, n: int, *, nagle: bool = False) -> list[Row]:
    """A scripted task of n read_file turns through the runner, against the bare SDK loops.

    `nagle=True` runs it against the server with Nagle's algorithm on; the row's floor is then
    the bare *sync* SDK loop (the async one pays the same stall the runner used to, see
    BENCHMARKS.md), otherwise the bare async loop. The note gives the other floor.
    """
    task = bench.task_file(f"turns-{n}", _task(n))
    runner_s, bare_s, sync_s, before_s, walls = [], [], [], [], []
    for rep in range(bench.reps):
        out = bench.scratch / f"out-turns-{wire}-{n}-{rep}-{int(nagle)}"
        bench.server.reset(script=turns_then_done(n), latency_s=0.0, nagle=nagle)
        _, wall, _ = bench.runner(
            "run", str(task), "--model", MODELS[wire], "--out", str(out), "-q"
        )
        runner_s.append(_per_turn(bench.server.arrivals))
        walls.append(wall)
        prompt = next((out / "prompts").glob("*.md"))
        bench.server.reset(script=turns_then_done(n), nagle=nagle)
        bench.bare("--wire", wire, "--system", str(prompt))
        bare_s.append(_per_turn(bench.server.arrivals))
        bench.server.reset(script=turns_then_done(n), nagle=nagle)
        bench.bare("--wire", wire, "--system", str(prompt), "--sync")
        sync_s.append(_per_turn(bench.server.arrivals))
        if bench.baseline is not None:
            bench.server.reset(script=turns_then_done(n), nagle=nagle)
            before = ("run", str(task), "--model", MODELS[wire], "--out", f"{out}-before", "-q")
            bench.runner(*before, root=bench.baseline)
            before_s.append(_per_turn(bench.server.arrivals))
    server = "Nagle on" if nagle else "TCP_NODELAY"
    bench.raw[f"per_turn.{wire}.{n}.{'nagle' if nagle else 'nodelay'}"] = {
        "runner_s": runner_s,
        "bare_async_s": bare_s,
        "bare_sync_s": sync_s,
        "before_s": before_s,
        "wall_s": walls,
    }
    runner = statistics.median(runner_s)
    async_floor, sync_floor = statistics.median(bare_s), statistics.median(sync_s)
    floor = sync_floor if nagle else async_floor
    other = (
        f"bare async {async_floor * 1e3:.3g} ms"
        if nagle
        else f"bare sync {sync_floor * 1e3:.3g} ms"
    )
    note = f"floor: bare {'sync' if nagle else 'async'} SDK loop; {other}"
    if before_s:
        before = statistics.median(before_s)
        note += f"; before: {before * 1e3:.3g} ms ({before / floor:.2f}x)"
    ok = n == 20 or runner <= 1.3 * floor
    target = "" if n == 20 else f"<= 1.3x bare {'sync' if nagle else 'async'}"
    figure = f"per-turn, {wire}, N={n}, {server}"
    return [Row(figure, runner, floor, "ms", target, None if n == 20 else ok, note)]


def cold_start(bench: Bench) -> list[Row]:
    """`--version`, and process start to the first model request with 1 and 3 MCP servers."""
    rows: list[Row] = []
    script = REPO / ".venv" / "bin" / "agent-runner"
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "runner"]
    version, floor = [], []
    for _ in range(bench.reps if bench.quick else bench.reps + 2):
        version.append(bench.spawn([*entry, "--version"])[1])
        floor.append(bench.spawn([sys.executable, "-c", "pass"])[1])
    bench.raw["cold.version"] = {"runner_s": version, "python_s": floor}
    v = statistics.median(version)
    rows.append(
        Row(
            "`agent-runner --version`",
            v,
            statistics.median(floor),
            "s",
            "<= 0.15 s",
            v <= 0.15,
            "floor: `python -c pass`",
        )
    )
    # Started as `python -m runner.workspace`, these two are real stdio servers; the built-in
    # workspace itself is served in-process.
    extra = "extensions:\n" + "".join(
        f"  ws{i}: {{cmd: {sys.executable}, args: [-m, runner.workspace, --root, .]}}\n"
        for i in (2, 3)
    )
    tasks = {1: bench.task_file("first-1", _task(0))}
    if not bench.quick:
        tasks[3] = bench.task_file("first-3", _task(0) + extra)
    bare_first: list[float] = []
    firsts: dict[int, list[float]] = {n: [] for n in tasks}
    # With stdio servers, two more sides: the bare SDK script starting the same two servers with
    # the bare MCP client first, and (with --baseline) the runner of before the change.
    bare_servers: list[float] = []
    before: list[float] = []

    def first(argv: tuple[str, ...], *, root: Path = REPO, bare: bool = False) -> float:
        bench.server.reset(script=turns_then_done(0))
        started, _, _ = bench.bare(*argv) if bare else bench.runner(*argv, root=root)
        return bench.server.arrivals[0].t - started

    for rep in range(bench.reps):
        for servers, task in tasks.items():
            out = bench.scratch / f"out-first-{servers}-{rep}"
            argv = ("run", str(task), "--model", MODELS["openai"], "--out", str(out), "-q")
            firsts[servers].append(first(argv))
            if servers == 3 and bench.baseline is not None:
                before.append(first((*argv[:-2], f"{out}-before", "-q"), root=bench.baseline))
        bare_first.append(first(("--wire", "openai", "--max-turns", "1"), bare=True))
        if 3 in tasks:
            argv = ("--wire", "openai", "--max-turns", "1", "--mcp-servers", "2")
            bare_servers.append(first(argv, bare=True))
    bench.raw["cold.first_request"] = {
        "runner_1_s": firsts[1],
        "runner_3_s": firsts.get(3, []),
        "bare_s": bare_first,
        "bare_2_servers_s": bare_servers,
        "before_3_s": before,
    }
    floor_s = statistics.median(bare_first)
    for servers in tasks:
        s = statistics.median(firsts[servers])
        rows.append(
            Row(
                "`run` to first model request, workspace only"
                if servers == 1
                else "`run` to first model request, workspace + 2 stdio MCP servers",
                s,
                floor_s,
                "s",
                "<= 1.3x bare" if servers == 1 else "<= 1.5x bare",
                s <= (1.3 if servers == 1 else 1.5) * floor_s,
                "floor: bare SDK script's first request"
                + ("" if servers == 1 else _servers_note(s, bare_servers, before)),
            )
        )
    return rows


def _servers_note(runner: float, bare_servers: list[float], before: list[float]) -> str:
    note = ""
    if bare_servers:
        floor = statistics.median(bare_servers)
        note += (
            f"; the bare script starting the same 2 servers with the bare MCP client first: "
            f"{floor:.2f} s, so {runner / floor:.2f}x"
        )
    if before:
        note += f"; before: {statistics.median(before):.2f} s"
    return note


def mcp_call(bench: Bench) -> list[Row]:
    """A read_file call through the hub against a bare ClientSession, same server."""
    calls, rounds = (30, 1) if bench.quick else (200, bench.reps)
    _, _, out = bench.spawn(
        [
            sys.executable,
            "-m",
            "benchmarks.mcp_calls",
            "--root",
            str(bench.workdir),
            "--calls",
            str(calls),
            "--rounds",
            str(rounds),
        ]
    )
    data = json.loads(out.strip().splitlines()[-1])
    bench.raw["mcp_call"] = data
    hub, bare = statistics.median(data["hub"]), statistics.median(data["bare"])
    local = statistics.median(data["local"])
    return [
        Row(
            "MCP tool call (read_file, stdio)",
            hub,
            bare,
            "ms",
            "<= 1.2x bare",
            hub <= 1.2 * bare,
            "floor: bare mcp ClientSession",
        ),
        Row(
            "built-in workspace call (read_file, in-process)",
            local,
            bare,
            "ms",
            "",
            None,
            "what a task's workspace call costs; floor: bare mcp ClientSession over stdio",
        ),
    ]


def read_only_suite(prefix: str, tasks: int, turns: int) -> str:
    """A suite of `tasks` tasks named PREFIX0.. that read notes.txt in `ws` for `turns` turns.
    Read-only, so that the tasks may share their workdir under --jobs (DESIGN 15)."""
    return (
        "defaults:\n  workdir: ws\n  prompt: Read notes.txt and report.\n"
        "  tools: {deny: [write_to_file, replace_in_file, execute_command]}\n"
        f"  limits: {{max_turns: {turns + 5}}}\ntasks:\n"
        + "".join(f"  - name: {prefix}{i}\n" for i in range(tasks))
    )


def bare_concurrent(bench: Bench, tasks: int, turns: int, latency: float) -> float:
    """The floor: the same SDK making the same conversations at once on one client, timed from
    the first request the server saw to the process's exit."""
    bench.server.reset(script=turns_then_done(turns), latency_s=latency)
    started, wall, _ = bench.bare("--wire", "openai", "--concurrent", str(tasks))
    phase = started + wall - bench.server.arrivals[0].t
    bench.server.reset(latency_s=0.0)
    return phase


def concurrency(bench: Bench) -> list[Row]:
    """32 tasks of 10 turns at 200 ms latency: --jobs 1 against --jobs 32."""
    tasks, turns, latency = (2, 1, 0.05) if bench.quick else (32, 10, 0.2)
    suite = read_only_suite("c", tasks, turns)
    path = bench.task_file("suite", suite)
    walls: dict[int, float] = {}
    phases: dict[int, float] = {}
    for jobs in (1, tasks):
        bench.server.reset(script=turns_then_done(turns), latency_s=latency)
        out = bench.scratch / f"out-jobs-{jobs}"
        started, walls[jobs], _ = bench.runner(
            "run",
            str(path),
            "--model",
            MODELS["openai"],
            "--jobs",
            str(jobs),
            "--out",
            str(out),
            "-q",
        )
        phases[jobs] = started + walls[jobs] - bench.server.arrivals[0].t
    bare_phase = bare_concurrent(bench, tasks, turns, latency)
    bench.raw["concurrency"] = {
        "tasks": tasks,
        "turns": turns,
        "latency_s": latency,
        "wall_s": walls,
        "first_request_to_exit_s": phases,
        "bare_concurrent_first_request_to_exit_s": bare_phase,
    }
    ideal = tasks * (turns + 1) * latency
    speedup, whole = phases[1] / phases[tasks], walls[1] / walls[tasks]
    return [
        Row(
            f"--jobs {tasks} speed-up ({tasks} tasks x {turns} turns, {latency * 1000:g} ms)",
            speedup,
            None,
            "x",
            ">= 25x" if not bench.quick else "",
            speedup >= 25 if not bench.quick else None,
            f"first request to exit: jobs 1 {phases[1]:.1f} s, jobs {tasks} "
            f"{phases[tasks]:.2f} s (latency alone {ideal:.1f} s / {ideal / tasks:.1f} s; "
            f"the bare SDK, {tasks} loops at once on one client: {bare_phase:.2f} s, "
            f"so at best {phases[1] / bare_phase:.1f}x); "
            f"whole process, start-up included: {walls[1]:.1f} s / {walls[tasks]:.2f} s = "
            f"{whole:.1f}x",
        )
    ]


def long_session(bench: Bench, system_prompt: Callable[[], str]) -> list[Row]:
    """A 1,000-turn session with compaction on: RSS, prompt bytes, log append cost."""
    from benchmarks.log_cost import measure_log_cost

    turns = 30 if bench.quick else 1000
    marks = (20, 30) if bench.quick else (100, 1000)
    config = bench.scratch / "long-config.yaml"
    config.write_text(
        "models:\n  bench-small: {context_window: 8000, input_usd_per_mtok: 0,"
        " output_usd_per_mtok: 0}\n",
        encoding="utf-8",
    )
    task = bench.task_file(
        "long",
        f"name: long\nworkdir: ws\nprompt: Read notes.txt and report."
        f"\nlimits: {{max_turns: {turns}}}\n",
    )
    bench.server.reset(script=lambda body: Step(text=READ_NOTES), latency_s=0.0)
    out = bench.scratch / "out-long"
    bench.runner(
        "run",
        str(task),
        "--model",
        "openai:bench-small",
        "--config",
        str(config),
        "--out",
        str(out),
        "-q",
        watch=True,
    )
    ran = _turns(bench.server.arrivals)
    summaries = len(bench.server.arrivals) - len(ran)
    bench.server.reset(script=lambda body: Step(text=READ_NOTES))
    bench.bare("--wire", "openai", "--max-turns", str(turns), watch=True)
    bare = bench.server.arrivals
    log_bytes = sum(p.stat().st_size for p in (out / "sessions").glob("*.jsonl"))

    def at(arrivals: list[Arrival], turn: int) -> Arrival:
        return arrivals[min(turn, len(arrivals)) - 1]

    a, b = marks
    rss = {m: at(ran, m).hwm_kib / 1024 for m in marks}
    bare_rss = {m: at(bare, m).hwm_kib / 1024 for m in marks}
    prompt = {m: at(ran, m).body_bytes for m in sorted({10, *marks})}
    bare_prompt = {m: at(bare, m).body_bytes for m in sorted({10, *marks})}
    growth_mb = rss[b] - rss[a]
    history_mb = prompt[b] / 1e6
    cost = measure_log_cost(turns, system_prompt())
    bench.raw["long_session"] = {
        "turns": turns,
        "summaries": summaries,
        "rss_mb": rss,
        "bare_rss_mb": bare_rss,
        "prompt_bytes": prompt,
        "bare_prompt_bytes": bare_prompt,
        "log_bytes": log_bytes,
        "log_cost": cost,
    }
    rows = [
        Row(
            f"peak RSS at turn {m}",
            rss[m],
            bare_rss[m],
            "MB",
            "<= 1.3x bare",
            rss[m] <= 1.3 * bare_rss[m],
            "floor: bare SDK loop at the same turn",
        )
        for m in marks
    ]
    rows.append(
        Row(
            f"RSS growth, turn {a} to {b}",
            growth_mb,
            history_mb,
            "MB",
            "<= stored history",
            growth_mb <= max(history_mb, 1.0),
            f"floor: live context at turn {b} ({prompt[b]} B); "
            f"session log {log_bytes / 1e6:.1f} MB on disk",
        )
    )
    rows.append(
        Row(
            f"log append, turn ~{turns} vs ~10",
            cost["append_end_s"],
            cost["append_start_s"],
            "ms",
            "<= 1.5x",
            cost["append_end_s"] <= 1.5 * cost["append_start_s"],
            f"in-process loop; appends/turn {cost['appends_per_turn_start']:.1f} -> "
            f"{cost['appends_per_turn_end']:.1f}; runner work per turn "
            f"{cost['turn_work_start_s'] * 1e3:.2f} -> "
            f"{cost['turn_work_end_s'] * 1e3:.2f} ms",
        )
    )
    for m in (10, *marks):
        rows.append(
            Row(
                f"prompt bytes sent at turn {m}",
                prompt[m],
                bare_prompt[m],
                "B",
                "",
                None,
                f"floor: bare loop without compaction; {summaries} summary call(s)",
            )
        )
    return rows
