"""Every store makes the same decisions: memory, a file under flock, Redis on TCP and on a unix
socket (real redis-server processes). Each decision is atomic: racing shards never hold more
than the cap together."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.fleet import MemoryStore, Store, StoreDown, open_store, safe_url
from tests.fakes.redis_server import RedisServer

pytestmark = pytest.mark.anyio

KINDS = ["memory", "file", "redis", "unix"]


@pytest.fixture(params=KINDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """A factory of stores on one shared state (each call: a new client, as a new shard)."""
    kind = request.param
    if kind == "memory":
        shared = MemoryStore()
        return lambda: shared
    if kind == "file":
        return lambda: open_store(f"file://{tmp_path / 'fleet.json'}")
    server: RedisServer = request.getfixturevalue("redis_tcp" if kind == "redis" else "redis_unix")
    return lambda: open_store(server.url)


@pytest.fixture
def run() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


async def test_a_reservation_that_does_not_fit_the_cap_is_refused(
    make_store: Callable[[], Store], run: str
) -> None:
    store = make_store()
    assert (await store.reserve(run, "a", "r1", 0.3, 0.5, 60))[0]
    held, spent, reserved = await store.reserve(run, "b", "r2", 0.3, 0.5, 60)
    assert (held, spent, reserved) == (False, 0.0, pytest.approx(0.3))
    await store.settle(run, "a", "r1", 0.1)  # the real cost frees the rest of the estimate
    assert (await store.reserve(run, "b", "r3", 0.3, 0.5, 60))[0]
    figures = await store.status(run)
    assert figures["spent_usd"] == pytest.approx(0.1)
    assert figures["reserved_usd"] == pytest.approx(0.3)
    assert (figures["calls"], figures["refused"], figures["shards"]) == (2, 1, 2)
    await store.aclose()


async def test_racing_shards_never_hold_more_than_the_cap(
    make_store: Callable[[], Store], run: str
) -> None:
    stores = [make_store() for _ in range(8)]

    async def shard(index: int, store: Store) -> int:
        held = 0
        for call in range(10):
            ok, _, _ = await store.reserve(run, f"s{index}", f"{index}-{call}", 0.03, 0.5, 60)
            held += ok
        return held

    counts = await asyncio.gather(*(shard(i, s) for i, s in enumerate(stores)))
    assert sum(counts) == 16  # 16 x $0.03 = $0.48; a 17th would pass $0.50
    assert (await stores[0].status(run))["reserved_usd"] == pytest.approx(0.48)
    for store in stores:
        await store.aclose()


async def test_an_expired_reservation_frees_its_share_of_the_cap(
    make_store: Callable[[], Store], run: str
) -> None:
    store = make_store()
    assert (await store.reserve(run, "killed", "r1", 0.5, 0.5, 0.2))[0]
    assert not (await store.reserve(run, "b", "r2", 0.1, 0.5, 60))[0]
    for _ in range(500):  # bounded: the reservation expires 0.2 s after it was made
        if (await store.reserve(run, "b", "r2", 0.1, 0.5, 60))[0]:
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the expired reservation was never freed")
    figures = await store.status(run)
    assert figures["expired"] == 1
    assert figures["reserved_usd"] == pytest.approx(0.1)


async def test_the_request_window_admits_rpm_requests_then_names_the_wait(
    make_store: Callable[[], Store], run: str
) -> None:
    store = make_store()
    bucket = [("openai:*", 3, 0, 60.0)]
    waits = [await store.admit(run, "a", f"r{i}", "openai", bucket, 10) for i in range(4)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert 59.0 < waits[3] <= 60.0
    # Another glob's window is its own.
    assert await store.admit(run, "a", "r9", "openai", [("openai:gpt-5", 3, 0, 60.0)], 10) == 0


async def test_the_token_window_counts_estimates_until_the_reply_says_what_was_used(
    make_store: Callable[[], Store], run: str
) -> None:
    store = make_store()
    bucket = [("openai:*", 0, 1000, 60.0)]
    assert await store.admit(run, "a", "r1", "openai", bucket, 900) == 0
    assert await store.admit(run, "a", "r2", "openai", bucket, 200) > 0
    await store.tokens_used(run, "r1", ["openai:*"], 300)
    assert await store.admit(run, "a", "r2", "openai", bucket, 200) == 0


async def test_a_pause_holds_every_shard_of_that_provider_only(
    make_store: Callable[[], Store], run: str
) -> None:
    one, other = make_store(), make_store()
    left = await one.pause(run, "a", "openai", 5.0)
    assert 4.5 < left <= 5.0
    assert 4.0 < await other.admit(run, "b", "r1", "openai", [], 10) <= 5.0
    assert await other.admit(run, "b", "r2", "anthropic", [], 10) == 0
    # A shorter pause does not cut a longer one short.
    assert await other.pause(run, "b", "openai", 1.0) > 4.0
    figures = await one.status(run)
    assert figures["rate_limited"] == 2
    assert figures["paused_s"] > 4.0


async def test_waits_add_up_across_shards(make_store: Callable[[], Store], run: str) -> None:
    await make_store().waited(run, 1.5)
    await make_store().waited(run, 0.5)
    figures = await make_store().status(run)
    assert (figures["waits"], figures["wait_s"]) == (2, 2.0)


async def test_a_redis_store_that_is_down_raises_store_down(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "r").start()
    store = open_store(server.url, timeout_s=2)
    assert (await store.reserve("x", "a", "r1", 0.1, 1.0, 60))[0]
    server.stop()
    with pytest.raises(StoreDown, match=r"governor store redis://127\.0\.0\.1"):
        await store.reserve("x", "a", "r2", 0.1, 1.0, 60)
    await store.aclose()


async def test_a_file_store_that_is_not_a_state_file_says_to_remove_it(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(StoreDown, match="remove it to start afresh"):
        await open_store(f"file://{path}").status("x")


def test_an_unknown_scheme_lists_the_known_ones_and_hides_the_password() -> None:
    with pytest.raises(ConfigError) as caught:
        open_store("mysql://user:hunter2@db/0")
    message = str(caught.value)
    assert "hunter2" not in message
    assert "redis://" in message and "file://" in message


def test_a_relative_file_url_is_refused() -> None:
    with pytest.raises(ConfigError, match="absolute file path"):
        open_store("file://fleet.json")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("rediss://:s3cret@cache.example:6380/0", "rediss://:***@cache.example:6380/0"),
        ("redis://default:s3cret@r:6379", "redis://default:***@r:6379"),
        ("redis://r:6379/0", "redis://r:6379/0"),
    ],
)
def test_a_store_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert safe_url(url) == shown


async def test_a_file_store_drops_runs_a_week_after_their_last_decision(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    store = open_store(f"file://{path}")
    await store.settle("old", "a", "r1", 0.5)
    state = json.loads(path.read_text(encoding="utf-8"))
    state["old"]["created"] = state["old"]["shards"]["a"] = 1.0  # long ago
    path.write_text(json.dumps(state), encoding="utf-8")
    await store.settle("new", "a", "r1", 0.1)
    assert set(json.loads(path.read_text(encoding="utf-8"))) == {"new"}
