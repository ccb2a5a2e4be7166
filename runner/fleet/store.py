"""The store seam: where the governor keeps a run's state, chosen by the URL's scheme.

`memory://` keeps it in this process (no governor given, or `on_error: local` after the store
went down); `file:///path` is a JSON file beside a lock file taken with `fcntl.flock`, for
several processes on one host; `redis://`, `rediss://` and `unix://` are Redis or Valkey
through redis-py (`runner.fleet.redis_store`, imported only then: the optional `fleet` extra).
Every method is one decision, atomic on the store; a store that cannot be reached raises
`StoreDown`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

from runner.errors import ConfigError
from runner.fleet import state as decide
from runner.fleet.config import StoreDown, safe_url
from runner.fleet.state import KEY_TTL_S, Bucket

__all__ = ["FileStore", "MemoryStore", "Store", "StoreDown", "open_store", "safe_url"]

T = TypeVar("T")
SCHEMES = ("memory", "file", "redis", "rediss", "unix")


class Store(Protocol):
    """One run's shared state; every method is one atomic decision."""

    async def reserve(
        self, run: str, shard: str, rid: str, amount: float, cap: float | None, ttl_s: float
    ) -> tuple[bool, float, float]: ...
    async def settle(self, run: str, shard: str, rid: str, cost: float) -> None: ...
    async def admit(
        self, run: str, shard: str, rid: str, scope: str, buckets: list[Bucket], tokens: int
    ) -> float: ...
    async def tokens_used(self, run: str, rid: str, globs: list[str], tokens: int) -> None: ...
    async def pause(self, run: str, shard: str, scope: str, seconds: float) -> float: ...
    async def waited(self, run: str, seconds: float) -> None: ...
    async def status(self, run: str) -> dict[str, Any]: ...
    async def aclose(self) -> None: ...


class _PythonStore:
    """The decisions of `runner.fleet.state`, applied inside `_locked` (a subclass's lock)."""

    @contextlib.contextmanager
    def _locked(self, run: str) -> Iterator[dict[str, Any]]:
        raise NotImplementedError
        yield {}

    async def _do(self, run: str, step: Callable[[dict[str, Any], float], T]) -> T:
        with self._locked(run) as state:
            return step(state, time.time())

    async def reserve(
        self, run: str, shard: str, rid: str, amount: float, cap: float | None, ttl_s: float
    ) -> tuple[bool, float, float]:
        return await self._do(
            run, lambda s, now: decide.reserve(s, now, shard, rid, amount, cap, ttl_s)
        )

    async def settle(self, run: str, shard: str, rid: str, cost: float) -> None:
        await self._do(run, lambda s, now: decide.settle(s, now, shard, rid, cost))

    async def admit(
        self, run: str, shard: str, rid: str, scope: str, buckets: list[Bucket], tokens: int
    ) -> float:
        return await self._do(
            run, lambda s, now: decide.admit(s, now, shard, rid, scope, buckets, tokens)
        )

    async def tokens_used(self, run: str, rid: str, globs: list[str], tokens: int) -> None:
        await self._do(run, lambda s, now: decide.tokens_used(s, now, rid, globs, tokens))

    async def pause(self, run: str, shard: str, scope: str, seconds: float) -> float:
        return await self._do(run, lambda s, now: decide.pause(s, now, shard, scope, seconds))

    async def waited(self, run: str, seconds: float) -> None:
        await self._do(run, lambda s, _: decide.waited(s, seconds))

    async def status(self, run: str) -> dict[str, Any]:
        return await self._do(run, decide.status)

    async def aclose(self) -> None:
        return None


class MemoryStore(_PythonStore):
    """The state in this process: per-process limits, as without a governor."""

    def __init__(self) -> None:
        self._runs: dict[str, dict[str, Any]] = {}

    @contextlib.contextmanager
    def _locked(self, run: str) -> Iterator[dict[str, Any]]:
        # One event loop, and no await inside a decision: nothing to lock.
        yield self._runs.setdefault(run, decide.new_state(time.time()))


class FileStore(_PythonStore):
    """The state of every run in one JSON file, read and written under an exclusive lock on
    `PATH.lock`; for the processes of one host (not over NFS, where flock may not hold)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_path = path.with_name(path.name + ".lock")
        if not path.parent.is_dir():
            raise StoreDown(f"governor file store: folder {path.parent} does not exist")

    @contextlib.contextmanager
    def _locked(self, run: str) -> Iterator[dict[str, Any]]:
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise StoreDown(f"governor file store {self._lock_path}: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            runs = self._read()
            now = time.time()
            for old in [key for key, seen in runs.items() if _last_seen(seen) < now - KEY_TTL_S]:
                del runs[old]  # as Redis expires a run's keys a week after its last decision
            state = runs.setdefault(run, decide.new_state(now))
            yield state
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(runs), encoding="utf-8")
            tmp.replace(self.path)
        except OSError as error:
            raise StoreDown(f"governor file store {self.path}: {error.strerror}") from None
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError):
            raise StoreDown(
                f"governor file store {self.path}: not a state file (remove it to start afresh)"
            ) from None
        if not isinstance(data, dict):
            raise StoreDown(f"governor file store {self.path}: not a state file")
        return data

    async def _do(self, run: str, step: Callable[[dict[str, Any], float], T]) -> T:
        def locked() -> T:
            with self._locked(run) as state:
                return step(state, time.time())

        # The lock may be held by another process for a moment: never block the event loop.
        return await asyncio.to_thread(locked)


def _last_seen(state: Any) -> float:
    """When a shard last touched a run's state (its creation if none has)."""
    if not isinstance(state, dict):
        return 0.0
    return max([float(state.get("created", 0.0)), *map(float, state.get("shards", {}).values())])


def open_store(url: str, timeout_s: float = 5.0) -> Store:
    """The store `url` names. Raises ConfigError for a scheme it does not know, or for Redis
    without redis-py installed."""
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return MemoryStore()
    if scheme == "file":
        parts = urlsplit(url)
        path = Path(unquote(parts.path))
        # `file://var/tmp/x` names the host `var`, not the folder: refused, not read as /tmp/x.
        if parts.netloc not in ("", "localhost") or not path.is_absolute() or path.name == "":
            raise ConfigError(
                f"governor url {safe_url(url)}: a file store needs an absolute file path "
                "(file:///path/fleet.json, three slashes)"
            )
        return FileStore(path)
    if scheme in ("redis", "rediss", "unix"):
        try:
            from runner.fleet.redis_store import RedisStore
        except ImportError:
            raise ConfigError(
                "governor url is Redis but redis-py is not installed "
                "(pip install 'agent-runner-ci[fleet]')"
            ) from None
        return RedisStore(url, timeout_s)
    raise ConfigError(
        f"governor url {safe_url(url)}: unknown scheme {scheme!r} "
        f"(known: {', '.join(s + '://' for s in SCHEMES)})"
    )
