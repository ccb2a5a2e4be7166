"""The shared rate gate: a 429's pause, the cap on requests at once, first come first served."""

from __future__ import annotations

import asyncio

import pytest

from runner.llm.providers.limiter import RAISE_AFTER_S, RateGate, gate_for, gated, keep_slot
from runner.llm.retry import CallError, CallTarget
from runner.settings import RetrySettings

pytestmark = pytest.mark.anyio

TARGET = CallTarget("openai", "m", "http://127.0.0.1:1/v1", None)


def too_many(retry_after: str | None = "0.05") -> CallError:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return CallError("status", "slow down", status=429, headers=headers)


async def test_a_429_with_retry_after_pauses_the_next_acquire_of_every_task() -> None:
    gate = RateGate()
    await gate.acquire()
    gate.release(too_many("0.05"), ok=False)
    resume_at = gate.paused_until
    loop = asyncio.get_running_loop()
    assert resume_at > loop.time()
    await gate.acquire()
    assert loop.time() >= resume_at


async def test_the_pause_is_capped_like_the_tasks_own_retry() -> None:
    gate = RateGate(retry_after_cap_s=0.01)
    await gate.acquire()
    gate.release(too_many("3600"), ok=False)
    assert gate.paused_until <= asyncio.get_running_loop().time() + 0.01


async def test_a_429_caps_requests_at_once_to_those_that_were_taken() -> None:
    gate = RateGate()
    for _ in range(4):
        await gate.acquire()
    gate.release(too_many(None), ok=False)  # three others were in flight: they were taken
    assert gate.limit == 3 and gate.in_flight == 3
    waiting = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0)
    assert not waiting.done()
    gate.release()
    await waiting
    assert gate.in_flight == 3


async def test_waiters_get_their_slots_in_order_of_arrival() -> None:
    gate = RateGate()
    await gate.acquire()
    await gate.acquire()
    gate.release(too_many(None), ok=False)  # limit 1, one in flight
    order: list[int] = []

    async def take(index: int) -> None:
        await gate.acquire()
        order.append(index)

    waiters = [asyncio.ensure_future(take(i)) for i in range(3)]
    await asyncio.sleep(0)
    for _ in range(3):
        gate.release()
        await asyncio.sleep(0)
    await asyncio.gather(*waiters)
    assert order == [0, 1, 2]


async def test_a_cancelled_waiter_leaves_its_place_and_takes_no_slot() -> None:
    gate = RateGate()
    await gate.acquire()
    await gate.acquire()
    gate.release(too_many(None), ok=False)
    waiter = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.release()
    assert gate.in_flight == 0
    await gate.acquire()
    assert gate.in_flight == 1


async def test_the_cap_rises_by_one_after_a_quiet_spell() -> None:
    gate = RateGate()
    await gate.acquire()
    await gate.acquire()
    gate.release(too_many(None), ok=False)
    assert gate.limit == 1
    gate._quiet_since -= RAISE_AFTER_S  # the spell has passed
    gate.release()
    assert gate.limit == 2


async def test_gated_calls_report_their_429s_and_failures_keep_no_slot() -> None:
    gate = RateGate()

    async def refused() -> str:
        raise too_many(None)

    async def fine() -> str:
        return "ok"

    with pytest.raises(CallError):
        await gated(refused, gate)()
    assert gate.rate_limited == 1 and gate.in_flight == 0
    assert await gated(fine, gate)() == "ok"
    assert gate.in_flight == 0


async def test_one_gate_per_provider_and_server_and_none_when_switched_off() -> None:
    policy = RetrySettings()
    other = CallTarget("openai", "other-model", TARGET.base_url, None)
    assert gate_for(TARGET, policy) is gate_for(other, policy)
    elsewhere = CallTarget("openai", "m", "http://127.0.0.1:2/v1", None)
    assert gate_for(elsewhere, policy) is not gate_for(TARGET, policy)
    assert gate_for(TARGET, RetrySettings(shared_limiter=False)) is None


async def test_a_waiter_cancelled_just_before_a_release_ends_cancelled_and_leaks_no_slot() -> None:
    # The race of issue 32: the waiter is cancelled, and `release()` runs before the waiting
    # task's own handler. `_give_back` drops the cancelled future from the queue itself, so the
    # handler must not try to remove it again (that was `ValueError: ... is not in deque`).
    gate = RateGate()
    await gate.acquire()
    gate.release(too_many(None), ok=False)  # limit 1, nothing in flight
    await gate.acquire()  # the one slot is taken
    waiting = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0)  # queued
    waiting.cancel()
    gate.release()  # before the waiting task has run its handler
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert gate.in_flight == 0 and not gate._waiting
    await asyncio.wait_for(gate.acquire(), 1)  # the slot is free for the next task
    assert gate.in_flight == 1


async def test_a_waiter_woken_then_cancelled_gives_its_slot_back() -> None:
    gate = RateGate()
    await gate.acquire()
    gate.release(too_many(None), ok=False)  # limit 1
    await gate.acquire()
    waiting = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0)
    gate.release()  # wakes the waiter: the slot is taken for it
    assert gate.in_flight == 1
    waiting.cancel()  # before it ran on
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert gate.in_flight == 0


async def test_every_429_pause_is_merged_with_the_one_in_force() -> None:
    gate = RateGate(retry_after_cap_s=1000)
    loop = asyncio.get_running_loop()
    ends = []
    for asked in ("100", "1", "300", "2"):
        await gate.acquire(pause=False)
        before = loop.time()
        gate.release(too_many(asked), ok=False)
        ends.append((gate.paused_until, before))
    # A shorter Retry-After never cuts short the pause in force; a longer one extends it.
    assert ends[1][0] == ends[0][0] >= ends[0][1] + 100
    assert ends[2][0] >= ends[2][1] + 300
    assert ends[3][0] == ends[2][0]
    assert gate.rate_limited == 4  # every 429 counted, by every task together
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    await gate.acquire(record)
    assert len(slept) == 1 and slept[0] > 299


async def test_a_waiter_woken_into_a_pause_that_began_while_it_waited_honours_it() -> None:
    gate = RateGate(retry_after_cap_s=1000)
    await gate.acquire()
    gate.release(too_many(None), ok=False)  # limit 1
    await gate.acquire()
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    waiting = asyncio.ensure_future(gate.acquire(record))
    await asyncio.sleep(0)
    assert slept == []  # queued, no pause yet
    gate.release(too_many("120"), ok=False)  # the slot goes to the waiter, and a pause begins
    await asyncio.wait_for(waiting, 1)
    assert len(slept) == 1 and slept[0] > 119


async def test_the_cap_rises_once_per_quiet_spell_and_a_429_starts_a_longer_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(asyncio.get_running_loop(), "time", lambda: now[0])  # the gate's clock
    gate = RateGate(retry_after_cap_s=1000)

    def at(when: float) -> None:
        now[0] = when

    for _ in range(3):
        await gate.acquire(pause=False)
    gate.release(too_many(None), ok=False)  # two were taken beside it: the cap is 2
    limits = []
    at(1000 + RAISE_AFTER_S - 0.1)
    gate.release()
    limits.append(gate.limit)  # not yet
    for when in (1000 + RAISE_AFTER_S, 1000 + 2 * RAISE_AFTER_S - 0.1, 1000 + 2 * RAISE_AFTER_S):
        at(when)
        await gate.acquire(pause=False)
        gate.release()
        limits.append(gate.limit)  # each spell counts from the last rise
    assert limits == [2, 3, 3, 4]
    at(1080)
    await gate.acquire(pause=False)
    await gate.acquire(pause=False)
    gate.release(too_many("10"), ok=False)  # a spell now lasts ten times the asked 10 s
    assert gate.limit == 2
    at(1179)
    gate.release()
    assert gate.limit == 2
    at(1180)
    gate.release(CallError("status", "boom", status=500), ok=False)  # a failure raises nothing
    assert gate.limit == 2
    await gate.acquire(pause=False)
    gate.release()
    assert gate.limit == 3
    kept = []

    async def call(answer: str | CallError) -> str:
        kept.append(keep_slot())
        if isinstance(answer, CallError):
            raise answer
        return answer

    at(1280)  # a spell has passed: a gated failure raises nothing, a success does
    with pytest.raises(CallError):
        await gated(lambda: call(CallError("status", "boom", status=500)), gate)()
    assert gate.limit == 3 and gate.in_flight == 0  # a failure keeps no slot, kept or not
    assert await gated(lambda: call("ok"), gate)() == "ok"
    kept.pop()()  # given back once the body is drained: that success counts too
    assert gate.limit == 4
    at(1380)
    assert await gated(lambda: call("ok"), gate)() == "ok"
    kept.pop()()
    assert gate.limit == 5
    at(1480)
    assert await gated(lambda: asyncio.sleep(0, "ok"), gate)() == "ok"  # a slot not kept
    assert gate.limit == 6


async def test_a_kept_slot_stays_taken_after_the_attempt_until_given_back_once() -> None:
    assert keep_slot() is None  # outside a gated attempt there is no slot to keep
    gate = RateGate()
    kept = []

    async def call() -> str:
        kept.append(keep_slot())
        return "reply"

    assert await gated(call, gate)() == "reply"
    assert gate.in_flight == 1  # the body is still draining: the slot stays taken
    (give_back,) = kept
    assert give_back is not None
    give_back()
    give_back()  # a second give-back gives nothing more back
    assert gate.in_flight == 0
    assert await gated(call, gate)() == "reply" and gate.in_flight == 1
    assert keep_slot() is None  # the attempt's slot was its own
    assert gated(call, None) is call  # no gate: the call as it is


async def test_the_attempt_after_its_own_429_skips_the_pause_and_other_tasks_wait_it_out() -> None:
    gate = RateGate(retry_after_cap_s=1000)
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    answers: list[str | CallError] = [too_many("100"), "ok", CallError("status", "x", status=500)]

    async def call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, CallError):
            raise answer
        return answer

    attempt = gated(call, gate, record)
    with pytest.raises(CallError):
        await attempt()
    assert await attempt() == "ok"  # its retry policy already waited the 100 s: no second wait
    assert slept == []
    with pytest.raises(CallError):
        await attempt()  # the pause is still on, and this attempt did not just get a 429
    assert len(slept) == 1 and slept[0] > 99
    assert await gated(lambda: asyncio.sleep(0, "other"), gate, record)() == "other"
    assert len(slept) == 2  # another task waits the pause out too
    assert gate.in_flight == 0 and gate.limit == 1
