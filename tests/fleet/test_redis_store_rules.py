"""The rules of the Redis store, each decision one Lua script on a real redis-server (TCP and a
unix socket): every figure of `status` starts at nothing and is rounded as the reports show it;
each argument of a decision reaches its place (run, shard, request, scope, amount, ttl, every
bucket); a reservation lives its ttl and an expired one is counted once, swept or not; a server
that refuses the scripts, does not answer, or is named by a malformed URL is `StoreDown`
without the password; closing the store closes its connection."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from runner.fleet import Store, StoreDown, open_store
from tests.fakes.redis_server import RedisServer, free_port

pytestmark = pytest.mark.anyio

EMPTY = {
    "spent_usd": 0.0,
    "reserved_usd": 0.0,
    "reservations": 0,
    "max_cost_usd": None,
    "calls": 0,
    "refused": 0,
    "expired": 0,
    "shards": 0,
    "waits": 0,
    "wait_s": 0.0,
    "rate_limited": 0,
    "paused_s": 0.0,
}


@pytest.fixture(params=["redis_tcp", "redis_unix"])
def store(request: pytest.FixtureRequest) -> Store:
    """A new client of the shared server (each test closes it)."""
    server: RedisServer = request.getfixturevalue(request.param)
    return open_store(server.url, 5.0)


@pytest.fixture
def run() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll `check` until it holds (bounded: 2,000 rounds of 10 ms at least)."""
    for _ in range(2000):
        if await check():
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"never: {what}")


async def test_a_run_nobody_touched_has_every_figure_at_nothing(store: Store, run: str) -> None:
    assert await store.status(run) == EMPTY
    await store.aclose()


async def test_every_figure_is_rounded_as_the_reports_show_it(store: Store, run: str) -> None:
    await store.reserve(run, "a", "r1", 0.1234567, None, 60)
    await store.reserve(run, "a", "r2", 0.5, None, 60)
    await store.settle(run, "a", "r2", 0.7654321)
    await store.waited(run, 1.23456)
    await store.pause(run, "a", "openai", 100.0)
    figures = await store.status(run)
    assert figures["reserved_usd"] == 0.123457
    assert figures["spent_usd"] == 0.765432
    assert figures["wait_s"] == 1.235
    assert 99.0 < figures["paused_s"] <= 100.0
    assert figures["paused_s"] == round(figures["paused_s"], 3)
    await store.aclose()


async def test_each_reservation_and_settle_lands_on_its_run_shard_and_request(
    store: Store, run: str
) -> None:
    assert await store.reserve(run, "a", "r1", 0.2, 1.0, 60) == (True, 0.0, pytest.approx(0.2))
    assert await store.reserve(run, "a", "r2", 0.3, 1.0, 60) == (True, 0.0, pytest.approx(0.5))
    figures = await store.status(run)
    assert (figures["shards"], figures["reservations"], figures["calls"]) == (1, 2, 2)
    assert figures["max_cost_usd"] == 1.0
    await store.settle(run, "a", "r1", 0.05)  # r1 only is freed
    figures = await store.status(run)
    assert (figures["shards"], figures["reservations"]) == (1, 1)
    assert figures["reserved_usd"] == pytest.approx(0.3)
    assert figures["spent_usd"] == pytest.approx(0.05)
    held, spent, reserved = await store.reserve(run, "c", "r3", 0.7, 1.0, 60)
    assert (held, spent, reserved) == (False, pytest.approx(0.05), pytest.approx(0.3))
    await store.settle(run, "b", "r2", 0.1)  # another shard may settle it (a retried call)
    figures = await store.status(run)
    assert (figures["shards"], figures["reservations"]) == (3, 0)
    assert figures["spent_usd"] == pytest.approx(0.15)
    assert (await store.status(f"{run}-other"))["calls"] == 0  # one run's keys are its own
    await store.aclose()


async def test_a_reservation_lives_its_ttl_and_each_expired_one_counts_once(
    store: Store, run: str
) -> None:
    async def nothing_held() -> bool:
        return (await store.status(run))["reservations"] == 0

    # A large amount with a short ttl: the ttl, not the amount, says when it expires.
    assert (await store.reserve(run, "a", "r1", 50.0, 100.0, 0.2))[0]
    await until(nothing_held, "the reservation expired")
    assert (await store.status(run))["expired"] == 1  # expired, not yet swept
    assert (await store.reserve(run, "a", "r2", 0.1, 100.0, 0.2))[0]  # sweeps r1
    await until(nothing_held, "the second reservation expired")
    figures = await store.status(run)
    assert (figures["expired"], figures["reserved_usd"]) == (2, 0.0)
    await store.aclose()


async def test_a_request_waits_for_the_fullest_of_all_its_windows(store: Store, run: str) -> None:
    buckets = [("openai:*", 1, 0, 60.0), ("openai:gpt-4*", 5, 0, 60.0)]
    assert await store.admit(run, "a", "r1", "openai", buckets, 10) == 0.0
    assert 59.0 < await store.admit(run, "b", "r2", "openai", buckets, 10) <= 60.0
    assert 59.0 < await store.admit(run, "b", "r2", "openai", buckets[::-1], 10) <= 60.0
    assert (await store.status(run))["shards"] == 2
    await store.aclose()


async def test_the_token_window_counts_each_request_under_its_own_id(
    store: Store, run: str
) -> None:
    bucket = [("openai:*", 0, 1000, 60.0)]
    assert await store.admit(run, "a", "r1", "openai", bucket, 600) == 0.0
    assert await store.admit(run, "a", "r2", "openai", bucket, 300) == 0.0
    assert await store.admit(run, "a", "r3", "openai", bucket, 200) > 0
    await store.tokens_used(run, "r2", ["openai:*"], 100)  # r2's reply: 100 tokens, not 300
    await store.tokens_used(run, "gone", ["openai:*"], 1)  # an unknown request: nothing
    await store.tokens_used(run, "r1", [], 1)  # no glob: nothing
    assert await store.admit(run, "a", "r3", "openai", bucket, 200) == 0.0
    assert await store.admit(run, "a", "r4", "openai", bucket, 200) > 0
    assert (await store.status(run))["shards"] == 1  # one shard, four requests
    await store.aclose()


async def test_a_pause_is_held_under_its_provider_and_returns_what_is_left(
    store: Store, run: str
) -> None:
    assert 4.5 < await store.pause(run, "a", "openai", 5.0) <= 5.0
    assert 4.0 < await store.admit(run, "a", "r1", "openai", [], 10) <= 5.0
    assert await store.admit(run, "a", "r2", "a", [], 10) == 0.0  # not the shard's name
    assert (await store.status(run))["shards"] == 1  # the shard, not the provider
    assert 4.0 < await store.admit(run, "b", "r3", "openai", [], 10) <= 5.0  # every shard
    assert await store.admit(run, "b", "r4", "anthropic", [], 10) == 0.0
    figures = await store.status(run)
    assert (figures["rate_limited"], figures["shards"]) == (1, 2)
    await store.aclose()


def replica(folder: Path) -> RedisServer:
    """A real read-only replica (of a master nobody runs)."""
    server = RedisServer(folder)
    server._args += ["--replicaof", "127.0.0.1", str(free_port())]
    return server


async def test_a_server_that_refuses_the_scripts_is_down_and_says_so(tmp_path: Path) -> None:
    with replica(tmp_path / "replica") as server:
        store = open_store(server.url, 5.0)
        for decision in (
            store.reserve("x", "a", "r1", 0.1, 1.0, 60),
            store.settle("x", "a", "r1", 0.1),
            store.pause("x", "a", "openai", 1.0),
        ):
            with pytest.raises(StoreDown) as caught:
                await decision
            message = str(caught.value)
            assert message.startswith(f"governor store {server.url}: the server refused: ")
            assert "read only replica" in message
        await store.aclose()


@contextlib.contextmanager
def frozen(server: RedisServer) -> Iterator[None]:
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


@pytest.mark.parametrize("unix", [False, True])
async def test_a_server_that_does_not_answer_is_down_after_the_store_timeout(
    tmp_path: Path, unix: bool
) -> None:
    with RedisServer(tmp_path / "r", unix=unix) as server:
        store = open_store(server.url, 0.3)
        await store.status("x")  # connected: then the server stops answering
        with frozen(server), pytest.raises(StoreDown, match=r"governor store .*: TimeoutError$"):
            # The store's own timeout, not this bound, ends the call.
            await asyncio.wait_for(store.reserve("x", "a", "r1", 0.1, 1.0, 60), 30)
        await store.aclose()


@pytest.mark.parametrize(
    "url",
    [
        "redis://:s3cret-pw@127.0.0.1:notaport/0",
        "unix://:s3cret-pw@/tmp/redis.sock?db=first",
        "rediss://:s3cret-pw@127.0.0.1:6380/0?socket_timeout=soon",
    ],
)
def test_a_malformed_redis_url_is_down_and_named_without_its_password(url: str) -> None:
    with pytest.raises(StoreDown) as caught:
        open_store(url)
    message = str(caught.value)
    assert message.startswith("governor url ") and ":***@" in message
    assert "s3cret-pw" not in message


async def test_closing_the_store_closes_its_connection(store: Store, run: str) -> None:
    url = store._url  # type: ignore[attr-defined]
    observer = aioredis.Redis.from_url(url)
    before = len(await observer.client_list())
    await store.status(run)
    assert len(await observer.client_list()) == before + 1

    async def closed() -> bool:
        return len(await observer.client_list()) == before

    await store.aclose()
    await until(closed, "the store's connection was closed")
    await store.aclose()  # closing twice is harmless
    await observer.aclose()


async def test_a_runs_keys_share_one_hash_tag_and_expire_a_week_after_its_last_decision(
    store: Store, run: str
) -> None:
    await store.reserve(run, "a", "r1", 0.1, 1.0, 60)
    await store.pause(run, "a", "openai", 5.0)
    observer = aioredis.Redis.from_url(store._url, decode_responses=True)  # type: ignore[attr-defined]
    keys = sorted(await observer.keys(f"*{run}*"))
    assert keys == [f"agent-runner:{{{run}}}:{name}" for name in ("pause", "res", "sh", "st")]
    for key in keys:
        assert 7 * 24 * 3600 - 60 < await observer.ttl(key) <= 7 * 24 * 3600
    await observer.aclose()
    await store.aclose()


async def test_a_store_timeout_longer_than_redis_pys_own_default_is_honoured(
    tmp_path: Path,
) -> None:
    # Last in the file: it waits 6 s. redis-py gives up on a read after 5 s unless told.
    with RedisServer(tmp_path / "r") as server:
        store = open_store(server.url, 60.0)
        await store.status("x")
        with frozen(server), pytest.raises(TimeoutError):  # this bound, not the store, ends it
            await asyncio.wait_for(store.reserve("x", "a", "r1", 0.1, 1.0, 60), 6.0)
        await store.aclose()
