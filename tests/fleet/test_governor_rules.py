"""The rules a shard's governor keeps, against real redis-server processes (TCP and a unix
socket): every call it holds, refuses, settles, waits for and is paused by is counted for the
shard and for the fleet; a request counts against every glob its model matches; a store that is
down or does not answer in time ends the run (`on_error: fail`) or leaves this shard alone with
what it already spent (`local`); and the governor is found through its context."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import os
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis.asyncio as aioredis

from runner.fleet import (
    FleetCapReached,
    Governor,
    GovernorSettings,
    MemoryStore,
    RateLimit,
    StoreDown,
    current_governor,
    open_store,
    use_governor,
)
from tests.fakes.redis_server import RedisServer

pytestmark = pytest.mark.anyio

DOWN = "redis://:hunter2@127.0.0.1:1/0"
"""A Redis nobody listens on (port 1), with a password that must never be shown."""


class Slept(Exception):
    """Raised by a sleep that must not be reached: the request was made to wait."""


@pytest.fixture(params=["redis_tcp", "redis_unix"])
def server(request: pytest.FixtureRequest) -> RedisServer:
    found: RedisServer = request.getfixturevalue(request.param)
    return found


@pytest.fixture
def run() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def make(
    url: str,
    run: str,
    *,
    cap: float | None = None,
    on_error: str = "fail",
    limits: dict[str, RateLimit] | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    timeout_s: float = 5.0,
    store_timeout_s: float = 5.0,
    say: Callable[[str], None] = lambda _: None,
) -> Governor:
    settings = GovernorSettings(
        url=url,
        run=run,
        on_error=on_error,  # type: ignore[arg-type]
        timeout_s=timeout_s,
        limits=limits or {},
    )
    extra = {"sleep": sleep} if sleep is not None else {}
    return Governor(
        settings,
        open_store(url, store_timeout_s),
        url=url,
        run=run,
        max_cost_usd=cap,
        say=say,
        **extra,  # type: ignore[arg-type]
    )


async def never_sleep(seconds: float) -> None:
    raise Slept(seconds)


async def fleet_status(url: str, run: str) -> dict[str, object]:
    """The run's figures as another client (another shard, `fleet status`) reads them."""
    store = open_store(url)
    try:
        return await store.status(run)
    finally:
        await store.aclose()


def pause_key(run: str) -> str:
    return f"agent-runner:{{{run}}}:pause"


@contextlib.contextmanager
def stopped(server: RedisServer) -> Iterator[None]:
    """The real server frozen (SIGSTOP): connections stay open, nothing is answered."""
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


async def test_a_fresh_governor_reports_nothing_done_yet(server: RedisServer, run: str) -> None:
    gov = make(server.url, run, cap=2.5)
    report = await gov.report()
    assert report["run"] == run and report["store"] == server.url
    assert (report["mode"], report["on_error"], report["max_cost_usd"]) == ("fleet", "fail", 2.5)
    assert report["shard"] == {
        "id": f"{socket.gethostname()}-{os.getpid()}",
        "calls": 0,
        "refused": 0,
        "spent_usd": 0.0,
        "waits": 0,
        "wait_s": 0.0,
        "rate_limited": 0,
    }
    assert report["warnings"] == []
    assert report["fleet"]["calls"] == 0 and report["fleet"]["shards"] == 0
    await gov.aclose()


async def test_every_call_held_refused_and_settled_is_counted_for_the_shard_and_the_fleet(
    server: RedisServer, run: str
) -> None:
    gov = make(server.url, run, cap=0.1)
    first, second = await gov.reserve(0.04), await gov.reserve(0.03)
    assert isinstance(first, str) and first != second
    figures = await fleet_status(server.url, run)
    assert (figures["calls"], figures["reservations"], figures["shards"]) == (2, 2, 1)
    assert figures["reserved_usd"] == pytest.approx(0.07)
    assert figures["max_cost_usd"] == pytest.approx(0.1)
    for _ in range(2):
        with pytest.raises(FleetCapReached) as caught:
            await gov.reserve(0.04)
    assert str(caught.value) == (
        f"fleet cost cap reached ($0.0000 spent and $0.0700 held by every shard of run {run}, "
        "of $0.10; this call could cost $0.0400)"
    )
    await gov.settle(first, 0.01)
    await gov.settle(second, 0.02)
    figures = await fleet_status(server.url, run)
    assert (figures["calls"], figures["refused"], figures["reservations"]) == (2, 2, 0)
    assert figures["spent_usd"] == pytest.approx(0.03)
    assert figures["reserved_usd"] == 0 and figures["shards"] == 1
    shard = (await gov.report())["shard"]
    assert (shard["calls"], shard["refused"], shard["spent_usd"]) == (2, 2, 0.03)
    await gov.aclose()


async def test_a_reservation_holds_its_estimate_until_settled_under_any_ttl(
    server: RedisServer, run: str
) -> None:
    gov = make(server.url, run, cap=None)
    await gov.reserve(0.25)
    figures = await fleet_status(server.url, run)
    assert figures["reserved_usd"] == pytest.approx(0.25) and figures["max_cost_usd"] is None
    await gov.aclose()


async def test_the_shards_spend_is_reported_to_the_micro_dollar(
    server: RedisServer, run: str
) -> None:
    gov = make(server.url, run)
    await gov.settle(await gov.reserve(0.2), 0.1234567)
    report = await gov.report()
    assert report["shard"]["spent_usd"] == 0.123457
    assert report["fleet"]["spent_usd"] == 0.123457
    await gov.aclose()


async def test_spend_before_the_store_went_down_counts_against_the_local_cap(
    tmp_path: Path, run: str
) -> None:
    said: list[str] = []
    with RedisServer(tmp_path / "r") as server:
        gov = make(server.url, run, cap=0.1, on_error="local", say=said.append)
        await gov.settle(await gov.reserve(0.08), 0.08)
    with pytest.raises(FleetCapReached):  # $0.08 already spent: $0.05 more passes $0.10
        await gov.reserve(0.05)
    assert gov.local and len(said) == 1
    await gov.settle(await gov.reserve(0.01), 0.01)
    report = await gov.report()
    assert report["mode"] == "local"
    assert report["fleet"]["spent_usd"] == pytest.approx(0.09)
    assert report["fleet"]["shards"] == 1  # only this shard, under its own name
    assert (report["shard"]["calls"], report["shard"]["refused"]) == (2, 1)
    await gov.aclose()


async def test_on_error_fail_never_asks_the_store_again_even_once_it_is_back(
    tmp_path: Path, run: str
) -> None:
    server = RedisServer(tmp_path / "r").start()
    try:
        gov = make(server.url, run, cap=1.0)
        await gov.reserve(0.01)
        server.stop()
        with pytest.raises(StoreDown, match="on_error: fail"):
            await gov.reserve(0.01)
        server.start()  # the same port, an empty server
        for decision in (
            gov.reserve(0.01),
            gov.admit("openai", "gpt-4.1", 10),
            gov.rate_limited("openai", 1.0),
        ):
            with pytest.raises(StoreDown, match="nothing more is sent"):
                await decision
        figures = await fleet_status(server.url, run)
        assert (figures["calls"], figures["rate_limited"], figures["shards"]) == (0, 0, 0)
        await gov.aclose()
    finally:
        server.stop()


async def test_a_store_that_does_not_answer_in_time_is_down(tmp_path: Path, run: str) -> None:
    with RedisServer(tmp_path / "r") as server:
        fail = make(server.url, run, timeout_s=0.3, store_timeout_s=60)
        local = make(server.url, run, timeout_s=0.3, store_timeout_s=60, on_error="local")
        with stopped(server):
            with pytest.raises(StoreDown) as caught:
                await fail.reserve(0.01)
            assert "no answer in time" in str(caught.value)
            assert "on_error: fail" in str(caught.value)
            report = await make(server.url, run, timeout_s=0.3, store_timeout_s=60).report()
            assert report["fleet"] is None
            assert report["warnings"] == ["fleet figures unavailable: timed out"]
            await local.reserve(0.01)
            assert local.local
            (warning,) = local.figures.warnings
            assert "no answer in time" in warning
        await fail.aclose()
        await local.aclose()


async def test_a_store_that_is_down_is_named_without_its_password(run: str) -> None:
    gov = make(DOWN, run, on_error="local")
    await gov.reserve(0.01)
    (warning,) = gov.figures.warnings
    assert warning.startswith("governor store redis://:***@127.0.0.1:1/0: ConnectionError")
    report = await make(DOWN, run).report()
    assert report["fleet"] is None
    (unavailable,) = report["warnings"]
    assert unavailable.startswith("fleet figures unavailable: governor store redis://:***@")
    assert "hunter2" not in unavailable


async def test_a_request_counts_against_every_glob_its_provider_and_model_match(
    server: RedisServer, run: str
) -> None:
    limits = {
        "openai:*": RateLimit(rpm=50),
        "anthropic:*": RateLimit(rpm=50),
        "openai:gpt-4*": RateLimit(tpm=100000),
        "*:mini": RateLimit(rpm=50),
    }
    gov = make(server.url, run, limits=limits, sleep=never_sleep)
    admission = await gov.admit("openai", "gpt-4.1", 10)
    assert admission.globs == ("openai:*", "openai:gpt-4*")
    assert len(admission.rid) == 32 and admission.rid != (await gov.admit("x", "y", 1)).rid
    with pytest.raises(dataclasses.FrozenInstanceError):
        admission.rid = "other"  # type: ignore[misc]
    assert (await gov.admit("anthropic", "mini", 10)).globs == ("anthropic:*", "*:mini")
    await gov.aclose()


async def test_a_shared_request_window_makes_the_next_request_wait(
    server: RedisServer, run: str
) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        raise Slept(seconds)

    gov = make(server.url, run, limits={"openai:*": RateLimit(rpm=3)}, sleep=sleep)
    other = open_store(server.url)
    assert await other.admit(run, "other", "o1", "openai", [("openai:*", 3, 0, 60.0)], 10) == 0
    await gov.admit("openai", "gpt-4.1", 500)  # token counts do not matter without a tpm
    await gov.admit("openai", "gpt-4.1", 500)
    assert slept == []
    with pytest.raises(Slept):
        await gov.admit("openai", "gpt-4.1", 500)
    assert slept == [5.0]  # some 60 s to wait, asked again after at most 5 s
    await gov.admit("anthropic", "claude", 10)  # another provider's window is its own
    await other.aclose()
    await gov.aclose()


async def test_a_request_with_room_waits_for_nothing_and_counts_no_wait(
    server: RedisServer, run: str
) -> None:
    gov = make(server.url, run, limits={"openai:*": RateLimit(rpm=3)}, sleep=never_sleep)
    await gov.admit("openai", "gpt-4.1", 10)
    await gov.admit("openai", "gpt-4.1", 10)
    report = await gov.report()
    assert (report["shard"]["waits"], report["fleet"]["waits"]) == (0, 0)
    await gov.aclose()


async def test_the_token_window_counts_what_the_reply_says_was_used(
    server: RedisServer, run: str
) -> None:
    limits = {"openai:*": RateLimit(tpm=1000), "openai:gpt-*": RateLimit(tpm=1000)}
    gov = make(server.url, run, limits=limits, sleep=never_sleep)
    first = await gov.admit("openai", "gpt-4.1", 900)
    await gov.used(first, 300)
    second = await gov.admit("openai", "gpt-4.1", 200)  # 300 + 200 fit where 900 + 200 did not
    await gov.admit("openai", "gpt-4.1", 400)
    await gov.used(second, 200)
    with pytest.raises(Slept):  # 300 + 200 + 400 used: 200 more do not fit
        await gov.admit("openai", "gpt-4.1", 200)
    await gov.used(await gov.admit("other", "model", 5), 5)  # no glob: nothing to count
    await gov.aclose()


async def test_a_429_pauses_every_shard_for_that_provider_and_each_wait_is_counted(
    server: RedisServer, run: str
) -> None:
    slept: list[float] = []
    client = aioredis.Redis.from_url(server.url)

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) % 2 == 0:  # ten seconds "passed": the pause is over
            await client.delete(pause_key(run))

    one = make(server.url, run)
    other = make(server.url, run, sleep=sleep)
    await one.rate_limited("openai", 12.0)
    await other.admit("anthropic", "claude", 10)  # another provider is not paused
    await other.admit("openai", "gpt-4.1", 10)
    assert slept == [5.0, 5.0]
    await one.rate_limited("openai", 30.0)
    await one.rate_limited("openai", 30.0)
    await other.admit("openai", "gpt-4.1", 10)
    assert slept == [5.0] * 4
    mine = (await other.report())["shard"]
    assert (mine["waits"], mine["wait_s"], mine["rate_limited"]) == (2, 20.0, 0)
    figures = (await one.report())["fleet"]
    assert (figures["waits"], figures["wait_s"], figures["rate_limited"]) == (2, 20.0, 3)
    assert (await one.report())["shard"]["rate_limited"] == 3
    await client.aclose()
    await one.aclose()
    await other.aclose()


async def test_a_short_pause_is_slept_out(server: RedisServer, run: str) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await asyncio.sleep(seconds)

    gov = make(server.url, run, sleep=sleep)
    await gov.rate_limited("openai", 0.3)
    await gov.admit("openai", "gpt-4.1", 10)
    assert slept and all(0 < wait <= 0.3 for wait in slept)
    assert gov.figures.waits == 1 and gov.figures.wait_s == pytest.approx(sum(slept))
    await gov.aclose()


async def test_the_shards_wait_is_reported_to_the_millisecond(
    monkeypatch: pytest.MonkeyPatch, run: str
) -> None:
    clock = SimpleNamespace(now=1_000_000.0)
    monkeypatch.setattr("runner.fleet.store.time", SimpleNamespace(time=lambda: clock.now))

    async def sleep(seconds: float) -> None:
        clock.now += seconds

    settings = GovernorSettings(url="memory://", run=run)
    store = MemoryStore()
    gov = Governor(settings, store, url="memory://", run=run, max_cost_usd=None, sleep=sleep)
    await gov.rate_limited("openai", 1.23456)
    await gov.admit("openai", "gpt-4.1", 10)
    assert gov.figures.wait_s == pytest.approx(1.23456)
    assert (await gov.report())["shard"]["wait_s"] == 1.235


async def test_closing_the_governor_closes_its_connections(server: RedisServer, run: str) -> None:
    observer = aioredis.Redis.from_url(server.url)
    before = len(await observer.client_list())
    gov = make(server.url, run)
    await gov.reserve(0.01)
    assert len(await observer.client_list()) == before + 1
    await gov.aclose()
    for _ in range(500):  # bounded: the server notices the close
        if len(await observer.client_list()) == before:
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the governor's connection was left open")
    await observer.aclose()


def test_the_governor_of_a_context_is_the_one_it_was_given() -> None:
    gov = Governor(
        GovernorSettings(url="memory://", run="r"),
        MemoryStore(),
        url="memory://",
        run="r",
        max_cost_usd=None,
    )

    def inside() -> object:
        assert current_governor() is None  # a context nobody gave one
        use_governor(gov)
        return current_governor()

    assert contextvars.Context().run(inside) is gov
    assert contextvars.Context().run(current_governor) is None
