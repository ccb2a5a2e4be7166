"""The memory and file stores (`runner.fleet.store`): each decision reaches the run, shard,
request and provider it names; the file store holds its lock for the whole decision, releases
it, keeps its lock file private, and is down (never silently wrong) when its files are not
usable; `open_store` knows every scheme it documents."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.fleet import MemoryStore, Store, StoreDown, open_store

pytestmark = pytest.mark.anyio

WEEK = 7 * 24 * 3600.0


@pytest.fixture(params=["memory", "file"])
def python_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """A factory of stores on one shared state, kept in this process or in a file."""
    if request.param == "memory":
        shared = MemoryStore()
        return lambda: shared
    return lambda: open_store(f"file://{tmp_path / 'fleet.json'}")


async def test_a_reservation_reaches_its_own_run_shard_request_and_amount(
    python_store: Callable[[], Store],
) -> None:
    store = python_store()
    assert await store.reserve("run-1", "shard-a", "req-1", 0.25, 1.0, 600.0) == (True, 0.0, 0.25)
    assert await store.reserve("run-1", "shard-a", "req-2", 0.5, 1.0, 600.0) == (True, 0.0, 0.75)
    assert not (await store.reserve("run-1", "shard-a", "req-3", 0.5, 1.0, 600.0))[0]
    mine = await store.status("run-1")
    assert (mine["reserved_usd"], mine["reservations"], mine["shards"]) == (0.75, 2, 1)
    assert (mine["calls"], mine["refused"], mine["max_cost_usd"]) == (2, 1, 1.0)
    other = await store.status("run-2")
    assert (other["reserved_usd"], other["calls"], other["shards"]) == (0.0, 0, 0)


async def test_a_reservation_lives_its_own_ttl_not_its_amount(
    python_store: Callable[[], Store],
) -> None:
    store = python_store()
    assert (await store.reserve("run-1", "shard-a", "req-1", 1e-9, None, 3600.0))[0]
    # Had the amount been taken for the ttl, the reservation would be gone a nanosecond later.
    assert (await store.status("run-1"))["reservations"] == 1


async def test_a_settle_frees_the_reservation_it_names_in_its_run_only(
    python_store: Callable[[], Store],
) -> None:
    store = python_store()
    for run in ("run-1", "run-2"):
        assert (await store.reserve(run, "shard-a", "req-1", 0.5, 1.0, 600.0))[0]
        assert (await store.reserve(run, "shard-a", "req-2", 0.25, 1.0, 600.0))[0]
    await store.settle("run-1", "shard-b", "req-1", 0.125)
    mine = await store.status("run-1")
    assert (mine["spent_usd"], mine["reserved_usd"], mine["shards"]) == (0.125, 0.25, 2)
    other = await store.status("run-2")
    assert (other["spent_usd"], other["reserved_usd"], other["shards"]) == (0.0, 0.75, 1)


async def test_a_request_is_admitted_to_its_own_run_provider_and_window(
    python_store: Callable[[], Store],
) -> None:
    store = python_store()
    bucket = [("openai:*", 2, 0, 600.0)]
    assert await store.admit("run-1", "shard-a", "req-1", "openai", bucket, 10) == 0.0
    assert await store.admit("run-1", "shard-b", "req-2", "openai", bucket, 10) == 0.0
    assert await store.admit("run-1", "shard-a", "req-3", "openai", bucket, 10) > 500.0
    # Another run's window is its own.
    assert await store.admit("run-2", "shard-a", "req-3", "openai", bucket, 10) == 0.0
    assert (await store.status("run-1"))["shards"] == 2
    # A pause of one provider in one run holds that provider of that run only.
    assert await store.pause("run-1", "shard-c", "anthropic", 300.0) > 290.0
    assert await store.admit("run-1", "shard-a", "req-4", "anthropic", [], 10) > 290.0
    assert await store.admit("run-1", "shard-a", "req-5", "google", [], 10) == 0.0
    assert await store.admit("run-2", "shard-a", "req-6", "anthropic", [], 10) == 0.0
    figures = await store.status("run-1")
    assert (figures["shards"], figures["rate_limited"]) == (3, 1)
    assert (await store.status("run-2"))["rate_limited"] == 0


async def test_a_requests_real_tokens_reach_its_own_run_and_window(
    python_store: Callable[[], Store],
) -> None:
    store = python_store()
    bucket = [("openai:*", 0, 1000, 600.0)]
    for run in ("run-1", "run-2"):
        assert await store.admit(run, "shard-a", "req-1", "openai", bucket, 900) == 0.0
    await store.tokens_used("run-1", "req-1", ["openai:*"], 100)
    assert await store.admit("run-1", "shard-a", "req-2", "openai", bucket, 900) == 0.0
    assert await store.admit("run-2", "shard-a", "req-2", "openai", bucket, 900) > 500.0


async def test_every_decision_counts_each_shard_that_made_it(
    python_store: Callable[[], Store],
) -> None:
    store = python_store()
    for shard, rid in (("shard-a", "req-1"), ("shard-b", "req-1"), ("shard-b", "req-2")):
        await store.reserve("run-r", shard, rid, 0.25, None, 600.0)
        await store.settle("run-s", shard, rid, 0.25)
        await store.admit("run-a", shard, rid, "openai", [], 10)
        await store.pause("run-p", shard, "openai", 1.0)
    for run in ("run-r", "run-s", "run-a", "run-p"):
        assert (await store.status(run))["shards"] == 2, run


async def test_waits_are_counted_in_their_own_run(python_store: Callable[[], Store]) -> None:
    store = python_store()
    await store.waited("run-1", 1.5)
    figures = await store.status("run-1")
    assert (figures["waits"], figures["wait_s"]) == (1, 1.5)
    assert (await store.status("run-2"))["waits"] == 0


# -- the file store's lock ------------------------------------------------------------------------


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_a_file_store_decision_leaves_no_descriptor_open(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path / 'fleet.json'}")
    await store.settle("run-1", "shard-a", "req-1", 0.1)
    before = _open_descriptors()
    await store.settle("run-1", "shard-a", "req-2", 0.1)
    await store.status("run-1")
    assert _open_descriptors() <= before


def test_the_file_stores_lock_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    asyncio.run(open_store(f"file://{tmp_path / 'fleet.json'}").status("run-1"))
    assert (tmp_path / "fleet.json.lock").stat().st_mode & 0o777 == 0o600


def _waiting_on(inode: int) -> bool:
    """Whether some process waits for a flock on the file with this inode (/proc/locks)."""
    for line in Path("/proc/locks").read_text(encoding="ascii").splitlines():
        fields = line.split()
        if "->" not in fields:
            continue
        at = fields.index("->")
        if fields[at + 1] == "FLOCK" and int(fields[at + 5].split(":")[2]) == inode:
            return True
    return False


def test_a_file_store_decision_waits_for_the_lock_and_reads_the_state_after_it(
    tmp_path: Path,
) -> None:
    """Another process's decision in progress (the lock held) is never overwritten."""
    path = tmp_path / "fleet.json"
    store = open_store(f"file://{path}")
    asyncio.run(store.settle("run-1", "shard-a", "req-1", 0.25))
    lock = tmp_path / "fleet.json.lock"
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    outcome: list[object] = []
    decision = threading.Thread(
        target=lambda: outcome.append(asyncio.run(store.settle("run-1", "shard-b", "req-2", 0.5)))
    )
    try:
        decision.start()
        inode = lock.stat().st_ino
        while not _waiting_on(inode):  # bounded by the decision: it ends or waits for the lock
            if not decision.is_alive():
                pytest.fail("the decision went ahead while another held the lock")
            decision.join(0.01)
        # What the other process decided while it held the lock.
        state = json.loads(path.read_text(encoding="utf-8"))
        state["run-1"]["spent"] = 1.0
        path.write_text(json.dumps(state), encoding="utf-8")
    finally:
        os.close(fd)
    decision.join()
    assert outcome == [None]
    assert asyncio.run(store.status("run-1"))["spent_usd"] == 1.5


# -- the file store's files unusable --------------------------------------------------------------


def test_a_file_store_in_a_folder_that_does_not_exist_is_down(tmp_path: Path) -> None:
    with pytest.raises(StoreDown, match=r"folder .*missing does not exist"):
        open_store(f"file://{tmp_path / 'missing' / 'fleet.json'}")


async def test_a_lock_file_that_cannot_be_opened_makes_the_store_down(tmp_path: Path) -> None:
    (tmp_path / "fleet.json.lock").mkdir()
    store = open_store(f"file://{tmp_path / 'fleet.json'}")
    with pytest.raises(StoreDown, match=r"fleet\.json\.lock"):
        await store.reserve("run-1", "shard-a", "req-1", 0.1, 1.0, 60.0)


async def test_a_state_path_that_is_a_folder_makes_the_store_down(tmp_path: Path) -> None:
    (tmp_path / "fleet.json").mkdir()
    store = open_store(f"file://{tmp_path / 'fleet.json'}")
    with pytest.raises(StoreDown, match=r"governor file store .*fleet\.json"):
        await store.status("run-1")


async def test_a_state_the_store_cannot_write_is_a_store_down_not_a_lost_decision(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fleet.json"
    store = open_store(f"file://{path}")
    assert (await store.reserve("run-1", "shard-a", "req-1", 0.5, 1.0, 60.0))[0]
    (tmp_path / f"fleet.json.{os.getpid()}.tmp").mkdir()  # where the next state is written
    with pytest.raises(StoreDown, match=r"governor file store .*fleet\.json"):
        await store.reserve("run-1", "shard-a", "req-2", 0.5, 1.0, 60.0)


@pytest.mark.parametrize("content", ["[1, 2]", '"text"', "3"])
async def test_a_state_file_that_holds_json_but_no_mapping_is_not_a_state_file(
    tmp_path: Path, content: str
) -> None:
    path = tmp_path / "fleet.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(StoreDown, match="not a state file"):
        await open_store(f"file://{path}").status("run-1")


async def test_a_state_file_of_bytes_that_are_not_text_is_not_a_state_file(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_bytes(b'{"run-1": \xff}')
    with pytest.raises(StoreDown, match="not a state file"):
        await open_store(f"file://{path}").status("run-1")


# -- a week after the last decision ---------------------------------------------------------------


@pytest.fixture
def aged(tmp_path: Path) -> Iterator[Callable[[dict[str, object]], set[str]]]:
    """Writes `runs` as the state file, makes one decision on another run, returns the runs kept."""
    path = tmp_path / "fleet.json"

    def keep(runs: dict[str, object]) -> set[str]:
        path.write_text(json.dumps(runs), encoding="utf-8")
        asyncio.run(open_store(f"file://{path}").settle("new", "b", "r1", 0.1))
        return set(json.loads(path.read_text(encoding="utf-8")))

    yield keep


def test_a_run_is_kept_a_week_after_its_latest_shard_decided_or_its_creation(
    aged: Callable[[dict[str, object]], set[str]],
) -> None:
    now = time.time()
    old, recent = now - 30 * 24 * 3600, now - 24 * 3600
    assert aged(
        {
            "created-recently": {"created": recent, "shards": {}},
            "one-shard-recent": {"created": old, "shards": {"a": old, "b": recent, "c": old}},
            "no-created-recent-shard": {"shards": {"a": recent}},
            "all-old": {"created": old, "shards": {"a": old, "b": now - WEEK - 60}},
            "no-figures": {},
            "not-a-state": [1, 2],
        }
    ) == {"created-recently", "one-shard-recent", "no-created-recent-shard", "new"}


# -- open_store -----------------------------------------------------------------------------------


def test_an_unknown_scheme_names_every_known_scheme() -> None:
    with pytest.raises(ConfigError) as caught:
        open_store("mysql://db/0")
    assert "(known: memory://, file://, redis://, rediss://, unix://)" in str(caught.value)
    assert "'mysql'" in str(caught.value)


@pytest.mark.parametrize(
    "url",
    ["redis://127.0.0.1:1/0", "rediss://:pw@cache.example:6380/0", "unix:///run/redis.sock?db=0"],
)
def test_every_redis_scheme_opens_a_redis_store_without_contacting_it(url: str) -> None:
    from runner.fleet.redis_store import RedisStore

    store = open_store(url, timeout_s=1.0)
    assert isinstance(store, RedisStore)
    asyncio.run(store.aclose())


def test_memory_opens_this_processs_store_and_a_file_url_a_file_store(tmp_path: Path) -> None:
    from runner.fleet.store import FileStore

    assert isinstance(open_store("memory://"), MemoryStore)
    store = open_store(f"file://{tmp_path / 'state%20file.json'}")
    assert isinstance(store, FileStore) and store.path == tmp_path / "state file.json"


@pytest.mark.parametrize(
    "url",
    ["file:///", "file://", "file:fleet.json", "file://fleet.json", "file://var/tmp/fleet.json"],
)
def test_a_file_url_without_an_absolute_file_path_is_refused(url: str) -> None:
    """`file://var/tmp/fleet.json` names the host `var`: read as `/tmp/fleet.json` it would put
    the state somewhere the user did not say."""
    with pytest.raises(ConfigError, match="a file store needs an absolute file path"):
        open_store(url)


def test_a_file_url_may_name_the_local_host(tmp_path: Path) -> None:
    from runner.fleet.store import FileStore

    store = open_store(f"file://localhost{tmp_path / 'fleet.json'}")
    assert isinstance(store, FileStore) and store.path == tmp_path / "fleet.json"


def test_redis_without_redis_py_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "runner.fleet.redis_store", None)  # an import that fails
    with pytest.raises(ConfigError, match=r"pip install 'agent-runner-ci\[fleet\]'"):
        open_store("redis://127.0.0.1:6379/0")
