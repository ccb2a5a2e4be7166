"""The fleet governor end to end (DESIGN 25): several real `agent-runner` processes, one fake
model server that counts what reaches it, and a real redis-server (TCP and unix socket).

Windows are shortened (`window_s`) and pauses are seconds, so the file takes well under a minute;
every wait is a bounded wait on a condition, and no assertion is on how long something took.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.fleet import open_store, read_status
from tests.e2e.conftest import (
    NO_WORKSPACE,
    REACH_S,
    RUN_TIMEOUT_S,
    Done,
    Scenario,
    Started,
    complete,
    kill,
    start,
    wait_until,
)
from tests.fakes.fleet_server import FleetModelServer, most_in_window
from tests.fakes.model_server import Step, fault
from tests.fakes.redis_server import RedisServer

pytestmark = pytest.mark.slow  # 8 and 16 runner processes at a time

MODEL = "openai:fleet-model"
INPUT_USD, OUTPUT_USD = 1.0, 10.0
"""Per million tokens: a reply of 1,000 to 5,000 tokens costs $0.01 to $0.05 (and its 12
prompt tokens $0.000012); a call's worst case is its prompt estimate plus 5,000 tokens."""
PRICES = {
    "fleet-model": {
        "context_window": 200_000,
        "input_usd_per_mtok": INPUT_USD,
        "output_usd_per_mtok": OUTPUT_USD,
        "max_output_tokens": 5000,
    }
}
SHARDS = [f"shard{i}" for i in range(8)]
SLOW_RETRIES = {
    # A 429's retry-after of 2 s is honoured, not cut to the suite's usual 0.2 s.
    "AGENT_RUNNER_RETRY__RETRY_AFTER_CAP_S": "5",
    "AGENT_RUNNER_RETRY__MAX_TOTAL_WAIT_S": "20",
}


def cost_of(step: Step) -> float:
    return (step.input_tokens * INPUT_USD + (step.output_tokens or 0) * OUTPUT_USD) / 1e6


def config(url: str, run: str, **governor: Any) -> str:
    return yaml.safe_dump({"models": PRICES, "governor": {"url": url, "run": run, **governor}})


def shard(name: str, tasks: int, config_text: str, env: Mapping[str, str] = {}) -> Scenario:
    """A shard: a suite of `tasks` one-call tasks whose prompts carry the shard's marker."""
    return Scenario(
        task={
            "defaults": {**NO_WORKSPACE, "workdir": "w"},
            "tasks": [
                {"name": f"t{i}", "prompt": f"Work of {name}, task {i}."} for i in range(tasks)
            ],
        },
        args=["run", "t.yaml", "--model", MODEL, "--out", "OUT"],
        extra_files={"agent-runner.yaml": config_text},
        env=env,
    )


def start_shards(
    names: list[str], server: FleetModelServer, base: Path, make: Callable[[str], Scenario]
) -> dict[str, Started]:
    return {name: start(make(name), base / name, server=server) for name in names}


def finish(started: Mapping[str, Started]) -> dict[str, Done]:
    try:
        return {name: run.wait(RUN_TIMEOUT_S) for name, run in started.items()}
    finally:
        for run in started.values():
            kill(run.process)


def fleet_of(done: Done) -> dict[str, Any]:
    entry: dict[str, Any] = done.summary()["fleet"]
    return entry


def status(url: str, run: str) -> dict[str, Any]:
    return read_status(url, run)


@pytest.fixture(scope="module")
def redis_tcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis-tcp")) as server:
        yield server


@pytest.fixture(scope="module")
def redis_unix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis-unix"), unix=True) as server:
        yield server


@pytest.fixture
def run_key() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


# --- one cap for eight shards ------------------------------------------------------------------


def test_eight_shards_share_one_cost_cap_and_stop_at_it_with_exit_5(
    redis_tcp: RedisServer, run_key: str, tmp_path: Path
) -> None:
    def answer(name: str, index: int) -> Step:
        tokens = 1000 * ((int(name[5:]) + index) % 5 + 1)
        return complete("done", output_tokens=tokens)

    cap = 0.5
    with FleetModelServer(answer) as server:
        text = config(redis_tcp.url, run_key, max_cost_usd=cap)
        done = finish(start_shards(SHARDS, server, tmp_path, lambda n: shard(n, 6, text)))
        served = [cost_of(a.step) for a in server.arrivals]
    spent = sum(d.summary()["totals"]["cost_usd"] for d in done.values())
    # Every call's real cost is below its reservation: the fleet stays under the cap itself.
    assert spent <= cap + 1e-9, spent
    # What reached the provider is what the shards reported: no call went out unreserved.
    assert sum(served) == pytest.approx(spent, abs=1e-6)
    assert sum(served) > cap - 0.05  # the cap, not a lack of work, stopped the fleet
    hit = []
    for name, run in done.items():
        kinds = {t["kind"] for t in run.summary()["tasks"] if t["status"] != "passed"}
        if kinds:
            assert kinds == {"run_cost"}, run.explain()
            assert run.code == 5, run.explain()
            hit.append(name)
        else:
            assert run.code == 0, run.explain()
    assert hit, "no shard reached the fleet's cap"
    figures = status(redis_tcp.url, run_key)
    assert figures["spent_usd"] == pytest.approx(spent, abs=1e-6)
    assert (figures["shards"], figures["reserved_usd"], figures["max_cost_usd"]) == (8, 0, cap)
    assert figures["refused"] >= len(hit)
    for run in done.values():
        entry = fleet_of(run)
        assert (entry["run"], entry["mode"], entry["store"]) == (run_key, "fleet", redis_tcp.url)
        assert entry["shard"]["spent_usd"] == pytest.approx(run.summary()["totals"]["cost_usd"])
    _merge_keeps_the_fleet_once(done, tmp_path, spent)


def _merge_keeps_the_fleet_once(done: Mapping[str, Done], tmp_path: Path, spent: float) -> None:
    junits = [str(d.out / "junit.xml") for d in done.values()]
    summaries = [str(d.out / "summary.json") for d in done.values()]
    merged = tmp_path / "merged.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "report",
            "merge",
            *junits,
            "-o",
            str(merged),
            "--summary",
            *summaries,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    fleet = summary["fleet"]
    # The fleet's spend once (the latest shard's figures), not eight times over.
    assert fleet["fleet"]["spent_usd"] == pytest.approx(spent, abs=1e-6)
    assert summary["totals"]["cost_usd"] == pytest.approx(spent, abs=1e-6)
    assert len(fleet["shards"]) == 8
    assert sum(s["spent_usd"] for s in fleet["shards"]) == pytest.approx(spent, abs=1e-6)


def test_shards_on_one_host_share_a_cap_through_a_file_store(run_key: str, tmp_path: Path) -> None:
    def answer(name: str, index: int) -> Step:
        return complete("done", output_tokens=3000)

    cap = 0.2
    state = tmp_path / "fleet-state.json"
    with FleetModelServer(answer) as server:
        text = config(f"file://{state}", run_key, max_cost_usd=cap)
        done = finish(start_shards(SHARDS[:3], server, tmp_path, lambda n: shard(n, 4, text)))
        served = sum(cost_of(a.step) for a in server.arrivals)
    spent = sum(d.summary()["totals"]["cost_usd"] for d in done.values())
    assert spent <= cap + 1e-9 and served == pytest.approx(spent, abs=1e-6)
    assert sorted(d.code for d in done.values())[-1] == 5  # 12 calls of $0.03 do not fit $0.20
    figures = read_status(f"file://{state}", run_key)
    assert (figures["shards"], figures["spent_usd"]) == (3, pytest.approx(spent, abs=1e-6))


# --- shared request windows ---------------------------------------------------------------------

RPM, WINDOW_S, CALLS = 8, 3.0, 4
"""8 requests per 3 s window for 8 shards of 4 one-call tasks: a round per window with the
governor; without it the rounds after the first come back to back."""


def _lockstep(server: list[FleetModelServer]) -> Callable[[str, int], Step]:
    """Answer a shard's k-th request once every shard has sent its k-th (or a bound passed):
    the shards move in rounds, so without a governor a round's requests come at once."""

    def answer(name: str, index: int) -> Step:
        server[0].wait_for(
            lambda arrivals: sum(1 for a in arrivals if a.index == index) >= len(SHARDS), 30
        )
        return complete("done", output_tokens=1000)

    return answer


def _rounds(redis: RedisServer | None, run_key: str, base: Path) -> list[float]:
    holder: list[FleetModelServer] = []
    limits = {"openai:*": {"rpm": RPM, "window_s": WINDOW_S}}
    if redis is not None:
        text = config(redis.url, run_key, limits=limits)
    else:
        text = yaml.safe_dump({"models": PRICES})
    with FleetModelServer(_lockstep(holder)) as server:
        holder.append(server)
        done = finish(start_shards(SHARDS, server, base, lambda n: shard(n, CALLS, text)))
        times = [a.at for a in server.arrivals]
    for run in done.values():
        assert run.code == 0, run.explain()
    assert len(times) == len(SHARDS) * CALLS
    return times


def test_eight_shards_keep_to_a_shared_request_window_and_exceed_it_without_the_governor(
    redis_tcp: RedisServer, run_key: str, tmp_path: Path
) -> None:
    bound = RPM + len(SHARDS)  # the window's requests, plus one in flight per shard
    governed = most_in_window(_rounds(redis_tcp, run_key, tmp_path / "with"), WINDOW_S)
    assert governed <= bound
    figures = status(redis_tcp.url, run_key)
    assert figures["waits"] > 0 and figures["wait_s"] > 0
    alone = most_in_window(_rounds(None, run_key, tmp_path / "without"), WINDOW_S)
    assert alone > bound, (governed, alone)


# --- a shared pause after a 429 -----------------------------------------------------------------


def test_a_429_to_one_shard_pauses_every_shard_for_its_retry_after(
    redis_unix: RedisServer, run_key: str, tmp_path: Path
) -> None:
    """Every shard's first request is in; shard0's is answered 429 (retry-after: 2), the
    others' once the pause is in the store: their next requests meet the pause."""
    paused = threading.Event()
    limited_at: list[float] = []
    holder: list[FleetModelServer] = []

    def answer(name: str, index: int) -> Step:
        if index == 0 and name == "shard0":
            holder[0].wait_for(lambda arrivals: len(arrivals) >= len(SHARDS), 60)
            limited_at.append(time.time())
            return fault("rate_limit", retry_after="2")
        if index == 0:
            paused.wait(60)
        return complete("done", output_tokens=1000)

    text = config(redis_unix.url, run_key)
    with FleetModelServer(answer) as server:
        holder.append(server)
        started = start_shards(SHARDS, server, tmp_path, lambda n: shard(n, 2, text, SLOW_RETRIES))
        try:
            wait_until(
                lambda: status(redis_unix.url, run_key)["rate_limited"] >= 1,
                REACH_S,
                "the 429 to reach the store",
            )
            paused.set()
        finally:
            paused.set()
            done = finish(started)
        later = [a for a in server.arrivals if a.at > limited_at[0]]
    for run in done.values():
        assert run.code == 0, run.explain()
    # After the 429: shard0's retry and every shard's second request, none within the 2 s.
    assert len(later) == 2 * len(SHARDS) - len(SHARDS) + 1
    assert min(a.at for a in later) >= limited_at[0] + 2.0
    for name in SHARDS[1:]:
        mine = fleet_of(done[name])["shard"]
        assert mine["waits"] >= 1 and mine["wait_s"] > 0, (name, mine)
    assert fleet_of(done["shard0"])["shard"]["rate_limited"] == 1
    figures = status(redis_unix.url, run_key)
    assert figures["rate_limited"] == 1
    assert figures["waits"] >= len(SHARDS) - 1


# --- a killed shard's reservation ---------------------------------------------------------------


def test_a_killed_shards_reservation_expires_and_the_others_finish_under_the_cap(
    redis_tcp: RedisServer, run_key: str, tmp_path: Path
) -> None:
    released = threading.Event()

    def answer(name: str, index: int) -> Step:
        if name == "shard0":
            released.wait(60)  # held: shard0 keeps its reservation until it is killed
        return complete("done", output_tokens=3000)

    cap = 0.3
    text = config(redis_tcp.url, run_key, max_cost_usd=cap, reservation_ttl_s=3)
    with FleetModelServer(answer) as server:
        victim = start_shards(["shard0"], server, tmp_path, lambda n: shard(n, 1, text))
        try:
            wait_until(lambda: server.count("shard0") == 1, REACH_S, "shard0's request")
            held = status(redis_tcp.url, run_key)
            assert held["reservations"] == 1 and held["reserved_usd"] > 0.05
            kill(victim["shard0"].process)
            others = start_shards(SHARDS[1:4], server, tmp_path, lambda n: shard(n, 3, text))
            done = finish(others)
        finally:
            released.set()
            kill(victim["shard0"].process)
    spent = sum(d.summary()["totals"]["cost_usd"] for d in done.values())
    assert spent <= cap + 1e-9
    wait_until(
        lambda: status(redis_tcp.url, run_key)["reservations"] == 0,
        REACH_S,
        "the killed shard's reservation to expire",
    )
    figures = status(redis_tcp.url, run_key)
    assert figures["expired"] >= 1 and figures["reserved_usd"] == 0
    assert figures["spent_usd"] == pytest.approx(spent, abs=1e-6)


# --- the store stopped mid-run ------------------------------------------------------------------


def test_the_store_stopped_mid_run_fails_before_spending_or_goes_on_locally(
    tmp_path: Path,
) -> None:
    released = threading.Event()

    def answer(name: str, index: int) -> Step:
        if index == 0:
            released.wait(60)
        return complete("done", output_tokens=1000)

    redis = RedisServer(tmp_path / "redis").start()
    try:
        configs = {
            "shard0": config(redis.url, "stopped", on_error="fail", max_cost_usd=5, timeout_s=2),
            "shard1": config(redis.url, "stopped", on_error="local", max_cost_usd=5, timeout_s=2),
        }
        with FleetModelServer(answer) as server:
            started = start_shards(
                ["shard0", "shard1"], server, tmp_path, lambda n: shard(n, 3, configs[n])
            )
            try:
                wait_until(lambda: server.count() == 2, REACH_S, "both shards' first requests")
                redis.stop()
                released.set()
            finally:
                done = finish(started)
            failed, local = done["shard0"], done["shard1"]
            # fail: the first call (sent before the store went) is paid; nothing after it is sent.
            assert server.count("shard0") == 1
            assert server.count("shard1") == 3
    finally:
        released.set()
        redis.stop()
    assert failed.code == 4, failed.explain()
    tasks = failed.summary()["tasks"]
    assert tasks[0]["status"] == "passed"
    assert all("governor store" in (t["reason"] or "") for t in tasks[1:]), tasks
    assert failed.summary()["totals"]["cost_usd"] == pytest.approx(0.010012)
    assert local.code == 0, local.explain()
    entry = fleet_of(local)
    assert entry["mode"] == "local"
    assert any("per-process limits" in w for w in entry["warnings"])
    assert "per-process limits" in local.stderr


def test_fleet_status_prints_a_runs_figures_and_names_an_unreachable_store(
    redis_tcp: RedisServer, run_key: str, tmp_path: Path
) -> None:
    async def seed() -> None:
        store = open_store(redis_tcp.url)
        await store.reserve(run_key, "a", "r1", 0.2, 1.0, 60)
        await store.settle(run_key, "a", "r1", 0.125)
        await store.aclose()

    asyncio.run(seed())
    cli = [sys.executable, "-m", "runner", "fleet", "status", run_key]
    shown = subprocess.run(
        [*cli, "--governor-url", redis_tcp.url, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    figures = json.loads(shown.stdout)
    assert (figures["spent_usd"], figures["shards"], figures["calls"]) == (0.125, 1, 1)
    text = subprocess.run(
        [*cli, "--governor-url", redis_tcp.url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert "$0.1250 spent" in text.stdout and "of $1.00" in text.stdout
    down = subprocess.run(
        [*cli, "--governor-url", "redis://:hunter2@127.0.0.1:1/0"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert down.returncode == 4, down.stderr
    assert "governor store redis://:***@127.0.0.1:1/0" in down.stderr
    assert "hunter2" not in down.stderr + down.stdout
