"""The idle deadline of a streamed call moves with what arrives, but not at every event."""

from __future__ import annotations

import asyncio

import pytest

from runner.llm.providers.streaming import IDLE_SLACK, IdleWatch
from runner.llm.retry import CallError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_events_within_the_slack_leave_the_deadline_where_it_is() -> None:
    async with IdleWatch(1000.0, "server") as watch:  # a slack of 10 s: nothing passes it here
        before = watch.deadline
        for _ in range(50):
            watch.alive()

        assert watch.deadline == before


async def test_an_event_after_the_slack_moves_the_deadline_on() -> None:
    idle_s = 0.5
    async with IdleWatch(idle_s, "server") as watch:
        before = watch.deadline
        await asyncio.sleep(idle_s * IDLE_SLACK * 2)  # time must pass for the deadline to move
        watch.alive()

        assert watch.deadline is not None and before is not None
        assert watch.deadline > before


async def test_silence_past_the_idle_time_is_a_retryable_error() -> None:
    with pytest.raises(CallError, match=r"sent nothing for 0\.05 s"):
        async with IdleWatch(0.05, "server"):
            await asyncio.Event().wait()
