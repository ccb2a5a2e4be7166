"""The fleet governor: one cost cap and one set of rate limits for every shard of a run.

Shards (matrix jobs, the pods of an Indexed Job, processes on one host) share a store named by
a URL (`config`, `store`; Redis through `redis_store`). Before a model call is sent the shard
reserves its worst-case cost and takes a place in the shared request and token windows after
any shared 429 pause; after it, it settles the real cost (`governor`). `state` holds the
decisions the in-process and file stores apply; `status` reads a run's figures for `fleet
status`. Without a governor nothing here runs and every limit stays per process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from runner.errors import ConfigError
from runner.fleet.config import GovernorSettings, RateLimit, default_run_key, limits_for
from runner.fleet.governor import (
    Admission,
    FleetCapReached,
    FleetGovernor,
    Governor,
    ShardFigures,
    current_governor,
    use_governor,
)
from runner.fleet.store import MemoryStore, Store, StoreDown, open_store, safe_url

__all__ = [
    "Admission",
    "FleetCapReached",
    "FleetGovernor",
    "Governor",
    "GovernorSettings",
    "MemoryStore",
    "RateLimit",
    "ShardFigures",
    "Store",
    "StoreDown",
    "current_governor",
    "default_run_key",
    "limits_for",
    "open_governor",
    "open_store",
    "read_status",
    "run_key",
    "status_line",
    "safe_url",
    "use_governor",
]


def run_key(settings: GovernorSettings, env: Mapping[str, str]) -> str:
    """The configured run key, else the CI's (`default_run_key`); ConfigError when neither."""
    key = settings.run or default_run_key(env)
    if key is None:
        raise ConfigError(
            "governor: no run key (set governor.run in the config, AGENT_RUNNER_GOVERNOR__RUN, "
            "or run under GitHub Actions or a Kubernetes Job with JOB_NAME set): every shard of "
            "a run must name the same key"
        )
    return key


def open_governor(
    settings: GovernorSettings,
    env: Mapping[str, str],
    url: str | None = None,
    max_cost_usd: float | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> Governor | None:
    """The shard's governor (None: no governor): `url` (`--governor-url`,
    AGENT_RUNNER_GOVERNOR_URL) over `governor.url`, `max_cost_usd` (`--fleet-max-cost-usd`) over
    `governor.max_cost_usd`. Nothing is contacted yet: the store is first reached by the first
    model call (`on_error` decides then)."""
    url = url or settings.url
    cap = max_cost_usd or settings.max_cost_usd
    if url is None:
        if cap is not None or settings.limits:
            raise ConfigError(
                "a fleet cap or shared limits need a governor: set governor.url in the config, "
                "AGENT_RUNNER_GOVERNOR_URL or --governor-url (docs/fleet.md)"
            )
        return None
    store = open_store(url, settings.timeout_s)
    return Governor(settings, store, url=url, run=run_key(settings, env), max_cost_usd=cap, say=say)


def read_status(url: str, run: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """The figures of run `run` in the store at `url` now (`agent-runner fleet status`).
    Raises ConfigError for `memory://` (nothing to read from outside), StoreDown when the store
    cannot be reached."""
    if url.startswith("memory:"):
        raise ConfigError("fleet status: memory:// is one process's own store; name a shared one")

    async def read() -> dict[str, Any]:
        store = open_store(url, timeout_s)
        try:
            return await asyncio.wait_for(store.status(run), timeout_s)
        except TimeoutError:
            raise StoreDown(f"governor store {safe_url(url)}: no answer in time") from None
        finally:
            await store.aclose()

    return {"run": run, "store": safe_url(url), **asyncio.run(read())}


def status_line(figures: Mapping[str, Any]) -> str:
    """One line of a run's figures (`read_status`, or summary.json's `fleet.fleet`)."""
    cap = figures.get("max_cost_usd")
    of = f" of ${float(cap):.2f}" if cap is not None else " (no cap)"
    return (
        f"${figures['spent_usd']:.4f} spent, ${figures['reserved_usd']:.4f} reserved by "
        f"{figures['reservations']} call(s) under way{of}; {figures['shards']} shard(s); "
        f"{figures['calls']} call(s), {figures['refused']} refused, {figures['expired']} "
        f"reservation(s) expired; {figures['waits']} wait(s), {figures['wait_s']:.1f} s in all; "
        f"{figures['rate_limited']} 429(s); paused {figures['paused_s']:.1f} s"
    )
