"""The fleet's face (`runner.fleet`): where the run key, the store and the cap come from (a flag
over the config, the config over nothing), what `fleet status` reads from a shared store, and the
line it prints."""

from __future__ import annotations

import asyncio
import fcntl
import gc
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.fleet import (
    GovernorSettings,
    StoreDown,
    open_governor,
    open_store,
    read_status,
    run_key,
    status_line,
)
from tests.fakes.redis_server import RedisServer

NOBODY = "redis://:hunter2@127.0.0.1:1/0"
"""A Redis nobody listens on (port 1), with a password that must never be shown."""


def test_the_configured_run_key_wins_and_the_cis_is_taken_without_one() -> None:
    ci = {"GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "2"}
    assert run_key(GovernorSettings(run="mine"), ci) == "mine"
    assert run_key(GovernorSettings(), ci) == "gh-77-2"
    assert run_key(GovernorSettings(), {"JOB_NAME": "agents"}) == "k8s-agents"
    with pytest.raises(ConfigError, match="every shard of a run must name the same key"):
        run_key(GovernorSettings(), {})


def test_the_flags_store_and_cap_win_over_the_configs(tmp_path: Path) -> None:
    settings = GovernorSettings(url=f"file://{tmp_path / 'config.json'}", max_cost_usd=50.0)
    flagged = open_governor(settings, {"JOB_NAME": "j"}, f"file://{tmp_path / 'flag.json'}", 7.0)
    assert flagged is not None
    assert (flagged.url, flagged.max_cost_usd, flagged.run) == (
        f"file://{tmp_path / 'flag.json'}",
        7.0,
        "k8s-j",
    )
    configured = open_governor(settings, {"JOB_NAME": "j"})
    assert configured is not None
    assert (configured.url, configured.max_cost_usd) == (f"file://{tmp_path / 'config.json'}", 50.0)
    assert configured.settings is settings


@pytest.mark.anyio
async def test_the_governor_uses_the_store_its_url_names(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    gov = open_governor(GovernorSettings(run="r"), {}, f"file://{path}", 1.0)
    assert gov is not None
    await gov.reserve(0.25)
    assert (await open_store(f"file://{path}").status("r"))["reserved_usd"] == 0.25


@pytest.mark.parametrize(
    ("settings", "cap"),
    [
        (GovernorSettings(max_cost_usd=5.0), None),
        (GovernorSettings(), 5.0),
        (GovernorSettings.model_validate({"limits": {"openai:*": {"rpm": 5}}}), None),
    ],
)
def test_a_cap_or_limits_without_a_store_are_a_config_error(
    settings: GovernorSettings, cap: float | None
) -> None:
    with pytest.raises(ConfigError, match="a fleet cap or shared limits need a governor"):
        open_governor(settings, {"JOB_NAME": "j"}, None, cap)


def test_no_store_no_cap_no_limits_is_no_governor() -> None:
    assert open_governor(GovernorSettings(run="r"), {}, None, None) is None


@pytest.mark.anyio
async def test_the_governor_says_its_warnings_through_the_callers_hook() -> None:
    said: list[str] = []
    settings = GovernorSettings(run="r", on_error="local", timeout_s=2)
    gov = open_governor(settings, {}, NOBODY, 1.0, say=said.append)
    assert gov is not None
    await gov.reserve(0.01)
    assert len(said) == 1 and said[0].startswith("warning: ") and "hunter2" not in said[0]
    await gov.aclose()


def test_fleet_status_refuses_this_processs_own_store() -> None:
    with pytest.raises(ConfigError, match="memory:// is one process's own store"):
        read_status("memory://", "r")


def test_fleet_status_reads_the_named_runs_figures_from_the_store(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'fleet.json'}"
    store = open_store(url)
    asyncio.run(store.reserve("wanted", "a", "q1", 0.5, 2.0, 600.0))
    asyncio.run(store.settle("other", "a", "q1", 1.0))
    figures = read_status(url, "wanted", 2.0)
    assert figures["run"] == "wanted" and figures["store"] == url
    assert (figures["reserved_usd"], figures["spent_usd"], figures["max_cost_usd"]) == (
        0.5,
        0.0,
        2.0,
    )


def test_fleet_status_shows_the_store_without_its_password(redis_tcp: RedisServer) -> None:
    # A redis-server whose default user has no password takes any AUTH.
    url = redis_tcp.url.replace("redis://", "redis://:unused-pass@")
    figures = read_status(url, "r", 2.0)
    assert figures["store"] == redis_tcp.url.replace("redis://", "redis://:***@")
    assert (figures["run"], figures["calls"]) == ("r", 0)


def _connected_clients(port: int) -> int:
    """The clients redis-server counts (this probe among them), by `INFO clients`."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as probe:
        probe.sendall(b"INFO clients\r\n")
        data = b""
        while b"\r\n" not in data or len(data) < int(data[1 : data.index(b"\r\n")]) + 4:
            chunk = probe.recv(65536)
            assert chunk, "redis-server closed the probe"
            data += chunk
    (line,) = [x for x in data.split(b"\r\n") if x.startswith(b"connected_clients:")]
    return int(line.split(b":")[1])


def test_fleet_status_closes_its_connection_to_the_store(redis_tcp: RedisServer) -> None:
    gc.disable()  # a connection left open must not be closed by the collector meanwhile
    try:
        read_status(redis_tcp.url, "r", 2.0)
        deadline = time.monotonic() + 10.0  # bounds the wait for the server to see the close
        while _connected_clients(redis_tcp.port) > 1:
            assert time.monotonic() < deadline, "fleet status left its connection open"
    finally:
        gc.enable()


def test_fleet_status_names_a_store_that_does_not_answer_in_time(tmp_path: Path) -> None:
    """A file store whose lock another process holds does not answer: `fleet status` says so
    once the lock is free (its reader thread ends then) instead of printing figures."""
    url = f"file://{tmp_path / 'fleet.json'}"
    asyncio.run(open_store(url).status("r"))
    fd = os.open(tmp_path / "fleet.json.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    raised: list[BaseException] = []

    def status() -> None:
        try:
            read_status(url, "r", 0.01)
        except BaseException as error:
            raised.append(error)

    reader = threading.Thread(target=status)
    try:
        reader.start()
        # The answer is given up on: asyncio.run then waits for its blocked reader thread.
        while not any("_do_shutdown" in t.name for t in threading.enumerate()):
            assert reader.is_alive(), raised
            reader.join(0.01)
    finally:
        os.close(fd)
    reader.join()
    assert len(raised) == 1 and isinstance(raised[0], StoreDown), raised
    assert str(raised[0]) == f"governor store {url}: no answer in time"


def test_the_status_line_says_every_figure_and_the_cap_or_that_there_is_none() -> None:
    figures = {
        "spent_usd": 12.41,
        "reserved_usd": 0.3,
        "reservations": 6,
        "max_cost_usd": 50,
        "shards": 4,
        "calls": 310,
        "refused": 2,
        "expired": 1,
        "waits": 41,
        "wait_s": 63.2,
        "rate_limited": 3,
        "paused_s": 1.5,
    }
    assert status_line(figures) == (
        "$12.4100 spent, $0.3000 reserved by 6 call(s) under way of $50.00; 4 shard(s); "
        "310 call(s), 2 refused, 1 reservation(s) expired; 41 wait(s), 63.2 s in all; "
        "3 429(s); paused 1.5 s"
    )
    uncapped = status_line({**figures, "max_cost_usd": None})
    assert "under way (no cap); 4 shard(s)" in uncapped
