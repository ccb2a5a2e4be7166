"""The governor a shard talks to: reservations against the fleet's cap, admission through the
shared windows and pauses, and what it did, for summary.json (DESIGN 25).

`runner.run` holds it as `FleetGovernor` (on the run budget) and `runner.llm` finds it with
`current_governor()` around each attempt; neither knows the store. The store down: `on_error:
fail` raises `StoreDown` (exit 4) at the next decision, before a call is sent; `local` swaps in a
`MemoryStore` (this process's limits, the fleet cap applied to this shard alone) and says so once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from runner.fleet.config import GovernorSettings, limits_for
from runner.fleet.state import Bucket
from runner.fleet.store import MemoryStore, Store, StoreDown, safe_url

__all__ = [
    "Admission",
    "FleetCapReached",
    "FleetGovernor",
    "Governor",
    "ShardFigures",
    "current_governor",
    "use_governor",
]

T = TypeVar("T")
MAX_SLEEP_S = 5.0
"""Longest single sleep before asking the store again (a pause may be lifted or lengthened)."""


class FleetCapReached(Exception):
    """The fleet's cap has no room for this call's worst case; nothing was sent."""


@dataclass(frozen=True)
class Admission:
    """One request let through the shared windows (settled with its real token count)."""

    rid: str
    globs: tuple[str, ...]


@dataclass
class ShardFigures:
    """What this shard did through the governor."""

    calls: int = 0
    refused: int = 0
    spent_usd: float = 0.0
    waits: int = 0
    wait_s: float = 0.0
    rate_limited: int = 0
    warnings: list[str] = field(default_factory=list)


class FleetGovernor(Protocol):
    """What `runner.run` and `runner.llm` need of the governor."""

    max_cost_usd: float | None

    async def reserve(self, estimate_usd: float) -> str: ...
    async def settle(self, ticket: str, cost_usd: float) -> None: ...
    async def admit(self, provider: str, model: str, tokens: int) -> Admission: ...
    async def used(self, admission: Admission, tokens: int) -> None: ...
    async def rate_limited(self, provider: str, seconds: float) -> None: ...


class Governor:
    """A shard's governor over a store (see the module docstring)."""

    def __init__(
        self,
        settings: GovernorSettings,
        store: Store,
        *,
        url: str,
        run: str,
        max_cost_usd: float | None,
        say: Callable[[str], None] = lambda _: None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.settings = settings
        self.url = safe_url(url)
        self.run = run
        self.max_cost_usd = max_cost_usd
        self.shard = f"{socket.gethostname()}-{os.getpid()}"
        self.figures = ShardFigures()
        self.local = False
        """True once `on_error: local` has fallen back to this process's limits."""
        self._store = store
        self._say = say
        self._sleep = sleep
        self._broken: str | None = None

    async def _do(self, step: Callable[[Store], Awaitable[T]]) -> T:
        if self._broken is not None:
            raise StoreDown(self._broken)
        try:
            return await asyncio.wait_for(step(self._store), self.settings.timeout_s)
        except (StoreDown, TimeoutError) as error:
            down = str(error) or f"governor store {self.url}: no answer in time"
            if self.settings.on_error == "fail":
                self._broken = f"{down} (governor on_error: fail; nothing more is sent)"
                raise StoreDown(self._broken) from None
            await self._go_local(down)
            return await step(self._store)

    async def _go_local(self, down: str) -> None:
        warning = (
            f"{down}: continuing with per-process limits (governor on_error: local); the fleet's "
            "cap and rate limits no longer hold across shards"
        )
        self.figures.warnings.append(warning)
        self._say(f"warning: {warning}")
        self.local = True
        store = MemoryStore()
        # This shard's own spend counts against the cap it now keeps alone.
        await store.settle(self.run, self.shard, "before", self.figures.spent_usd)
        self._store = store

    async def reserve(self, estimate_usd: float) -> str:
        """Hold `estimate_usd` of the fleet's cap; raise FleetCapReached when it does not fit."""
        ticket = uuid.uuid4().hex
        held, spent, reserved = await self._do(
            lambda store: store.reserve(
                self.run,
                self.shard,
                ticket,
                estimate_usd,
                self.max_cost_usd,
                self.settings.reservation_ttl_s,
            )
        )
        if not held:
            self.figures.refused += 1
            raise FleetCapReached(
                f"fleet cost cap reached (${spent:.4f} spent and ${reserved:.4f} held by every "
                f"shard of run {self.run}, of ${self.max_cost_usd or 0:.2f}; this call could cost "
                f"${estimate_usd:.4f})"
            )
        self.figures.calls += 1
        return ticket

    async def settle(self, ticket: str, cost_usd: float) -> None:
        """The call behind `ticket` cost `cost_usd` (a call that failed: 0)."""
        self.figures.spent_usd += cost_usd
        # Already spent: a store that is down ends the task at its next reservation.
        with contextlib.suppress(StoreDown):
            await self._do(lambda store: store.settle(self.run, self.shard, ticket, cost_usd))

    async def admit(self, provider: str, model: str, tokens: int) -> Admission:
        """Wait out the provider's shared pause and every matching window, then take a place."""
        globs = limits_for(self.settings.limits, provider, model)
        buckets: list[Bucket] = [
            (glob, lim.rpm or 0, lim.tpm or 0, lim.window_s)
            for glob in globs
            for lim in (self.settings.limits[glob],)
        ]
        rid = uuid.uuid4().hex
        waited = 0.0
        while True:
            wait = await self._do(
                lambda store: store.admit(self.run, self.shard, rid, provider, buckets, tokens)
            )
            if wait <= 0:
                break
            wait = min(wait, MAX_SLEEP_S)
            await self._sleep(wait)
            waited += wait
        if waited:
            self.figures.waits += 1
            self.figures.wait_s += waited
            await self._do(lambda store: store.waited(self.run, waited))
        return Admission(rid, tuple(globs))

    async def used(self, admission: Admission, tokens: int) -> None:
        """The admitted request's reply says it used `tokens` in all (`state.tokens_used`)."""
        if admission.globs:
            globs = list(admission.globs)
            await self._do(lambda store: store.tokens_used(self.run, admission.rid, globs, tokens))

    async def rate_limited(self, provider: str, seconds: float) -> None:
        """A 429 from `provider` asking for `seconds`: every shard pauses its requests to it."""
        self.figures.rate_limited += 1
        await self._do(lambda store: store.pause(self.run, self.shard, provider, seconds))

    async def report(self) -> dict[str, Any]:
        """summary.json's `fleet` entry: the fleet's figures now, and this shard's."""
        fleet: dict[str, Any] | None
        try:
            fleet = await asyncio.wait_for(self._store.status(self.run), self.settings.timeout_s)
        except (StoreDown, TimeoutError) as error:
            fleet = None
            # A TimeoutError says nothing (`str()` is empty), and an exception is always true.
            self.figures.warnings.append(f"fleet figures unavailable: {str(error) or 'timed out'}")
        mine = self.figures
        mode: Literal["fleet", "local"] = "local" if self.local else "fleet"
        return {
            "run": self.run,
            "store": self.url,
            "mode": mode,
            "on_error": self.settings.on_error,
            "max_cost_usd": self.max_cost_usd,
            "fleet": fleet,
            "shard": {
                "id": self.shard,
                "calls": mine.calls,
                "refused": mine.refused,
                "spent_usd": round(mine.spent_usd, 6),
                "waits": mine.waits,
                "wait_s": round(mine.wait_s, 3),
                "rate_limited": mine.rate_limited,
            },
            "warnings": list(mine.warnings),
        }

    async def aclose(self) -> None:
        await self._store.aclose()


_CURRENT: contextvars.ContextVar[FleetGovernor | None] = contextvars.ContextVar(
    "fleet_governor", default=None
)


def use_governor(governor: FleetGovernor | None) -> None:
    """Make `governor` the one the model calls of this context (and the tasks it starts) use."""
    _CURRENT.set(governor)


def current_governor() -> FleetGovernor | None:
    """The governor of this context's run; None without one."""
    return _CURRENT.get()
