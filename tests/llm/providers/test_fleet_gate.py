"""The provider's side of the fleet governor: a 429's wait read from retry-after or the reset
headers, and each attempt admitted, paused and settled through the governor of its run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runner.fleet import Governor, GovernorSettings, MemoryStore, use_governor
from runner.llm.providers.limiter import governed, reset_after
from runner.llm.retry import CallError, CallTarget
from runner.settings import RetrySettings

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
TARGET = CallTarget("openai", "gpt-4.1", "http://127.0.0.1:1/v1", None)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"x-ratelimit-reset-requests": "1s"}, 1.0),
        ({"x-ratelimit-reset-requests": "6m0s"}, 360.0),
        ({"x-ratelimit-reset-tokens": "20ms"}, 0.02),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "1m30.5s"}, 90.5),
        ({"anthropic-ratelimit-requests-reset": "2026-01-01T12:00:07Z"}, 7.0),
        ({"Anthropic-Ratelimit-Tokens-Reset": "2026-01-01T12:00:03+00:00"}, 3.0),
        ({"anthropic-ratelimit-requests-reset": "2025-12-31T00:00:00Z"}, 0.0),
        ({"x-ratelimit-reset-requests": "soon"}, None),
        ({}, None),
    ],
)
def test_reset_headers_say_how_long_to_pause(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert reset_after(headers, NOW) == (None if seconds is None else pytest.approx(seconds))


def gov(store: MemoryStore, **limits: dict[str, int]) -> Governor:
    settings = GovernorSettings(url="memory://", run="r", limits=limits)  # type: ignore[arg-type]
    return Governor(settings, store, url="memory://", run="r", max_cost_usd=None)


async def test_a_429_without_a_retry_after_pauses_the_fleet_by_its_reset_header() -> None:
    store = MemoryStore()
    use_governor(gov(store))

    async def limited() -> int:
        raise CallError("status", "429", status=429, headers={"x-ratelimit-reset-requests": "4s"})

    with pytest.raises(CallError):
        await governed(limited, TARGET, 10, lambda r: r, RetrySettings())()
    figures = await store.status("r")
    assert figures["rate_limited"] == 1 and 3.5 < figures["paused_s"] <= 4.0
    use_governor(None)


async def test_the_pause_is_capped_like_the_retry_policys_wait() -> None:
    store = MemoryStore()
    use_governor(gov(store))

    async def limited() -> int:
        raise CallError("status", "429", status=429, headers={"retry-after": "3600"})

    with pytest.raises(CallError):
        await governed(limited, TARGET, 10, lambda r: r, RetrySettings(retry_after_cap_s=30))()
    assert (await store.status("r"))["paused_s"] <= 30
    use_governor(None)


async def test_an_attempt_counts_its_real_tokens_in_the_shared_window() -> None:
    store = MemoryStore()
    use_governor(gov(store, **{"openai:*": {"tpm": 1000}}))

    async def reply() -> int:
        return 120

    assert await governed(reply, TARGET, 900, lambda used: used, RetrySettings())() == 120
    (entry,) = store._runs["r"]["windows"]["openai:*"].values()
    assert entry[1] == 120  # the estimate of 900 gave way to what the reply used
    use_governor(None)


async def test_without_a_governor_the_call_is_left_as_it_is() -> None:
    async def reply() -> int:
        return 1

    assert governed(reply, TARGET, 10, lambda r: r, RetrySettings()) is reply
