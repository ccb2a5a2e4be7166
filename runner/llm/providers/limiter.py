"""One rate gate per provider and server, shared by every task of the run (issue 19, fan-out).

Without it, 32 tasks against a server that takes 8 requests at a time each learn of the limit on
their own: each gets its 429, each waits its `retry-after`, and all of them come back at once
into the same wall. The gate makes what one task learns hold for all of them:

- a 429 with `retry-after` (or `retry-after-ms`) pauses every task's next attempt on the same
  provider and server until that time (capped by `retry.retry_after_cap_s`, as the task's own
  retry is);
- a 429 also caps how many requests go out at once: at most one fewer than were in flight when
  it came (the others were accepted), so after the first burst the run sends what the server
  takes, and the rest of the tasks queue in order instead of being turned away;
- after a quiet spell without a 429 (`RAISE_AFTER_S`, or ten times the longest `retry-after`
  seen if that is longer) the cap rises by one, so that a limit that was only momentary (tokens
  per minute) does not hold the run back for good. The spell is long because finding out costs
  a 429, and with it a pause of every task.

Across the processes of a run (shards) the fleet's governor does the same with a store
(`governed`, DESIGN 25): a shared pause after a 429, shared request and token windows.

Keyed by (provider, base URL): within one run each provider has one key, so this is "same
provider and key". `retry.shared_limiter: false` turns it off (the benchmark's "without" row).
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TypeVar

from runner.fleet import current_governor
from runner.llm.retry import CallError, CallTarget, Sleep, parse_retry_after
from runner.settings import RetrySettings

__all__ = [
    "RAISE_AFTER_S",
    "RateGate",
    "gate_for",
    "gated",
    "governed",
    "keep_slot",
    "reset_after",
]

T = TypeVar("T")
RAISE_AFTER_S = 30.0
"""Seconds without a 429 after which the concurrency cap rises by one (and again after as many);
ten times the longest `retry-after` seen when that is longer."""

_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], RateGate]] = (
    weakref.WeakKeyDictionary()
)


class RateGate:
    """What the tasks of one provider and server share: a pause, and a cap on requests at once."""

    def __init__(self, retry_after_cap_s: float = 60.0) -> None:
        self._loop = asyncio.get_running_loop()
        self._cap_s = retry_after_cap_s
        self.limit: int | None = None
        """Requests allowed at once; None until a 429 has been seen."""
        self.in_flight = 0
        """Requests under way now."""
        self.paused_until = 0.0
        """Event-loop time before which no request goes out."""
        self.rate_limited = 0
        """429s seen by every task together."""
        self._quiet_since = 0.0
        self._quiet_needed = RAISE_AFTER_S
        self._waiting: deque[asyncio.Future[None]] = deque()
        """Tasks waiting for a slot, first come first served."""

    async def acquire(self, sleep: Sleep = asyncio.sleep, *, pause: bool = True) -> None:
        """Wait for the pause to end (unless not `pause`) and a free slot, then take it."""
        if pause:
            await self._pause(sleep)
        if self._waiting or not self._has_room():
            waiter = self._loop.create_future()
            self._waiting.append(waiter)
            try:
                await waiter  # the slot is taken for this task by the `_wake` that sets it
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._give_back()  # woken, then cancelled: the slot it was given goes back
                elif waiter in self._waiting:
                    # Still queued. A `_give_back` that ran between the cancel and this handler
                    # has already dropped it (and taken no slot for it): nothing to remove then.
                    self._waiting.remove(waiter)
                raise
            # A pause may have begun while this task waited for its slot: honour it too.
            await self._pause(sleep)
        else:
            self.in_flight += 1

    async def _pause(self, sleep: Sleep) -> None:
        delay = self.paused_until - self._loop.time()
        if delay > 0:
            await sleep(delay)

    def _has_room(self) -> bool:
        return self.limit is None or self.in_flight < self.limit

    def release(self, error: CallError | None = None, *, ok: bool = True) -> None:
        """Give the slot back; `error` is how the attempt failed, `ok` whether it succeeded."""
        now = self._loop.time()
        if error is not None and error.kind == "status" and error.status == 429:
            self.rate_limited += 1
            # The requests still in flight beside this one were taken: that is the capacity.
            self.limit = max(1, min(self.limit or self.in_flight, self.in_flight - 1))
            self._quiet_since = now
            asked = parse_retry_after(error.headers)
            if asked is not None:
                self.paused_until = max(self.paused_until, now + min(asked, self._cap_s))
                self._quiet_needed = max(self._quiet_needed, 10 * min(asked, self._cap_s))
        elif ok and self.limit is not None and now - self._quiet_since >= self._quiet_needed:
            self.limit += 1
            self._quiet_since = now
        self._give_back()

    def _give_back(self) -> None:
        self.in_flight -= 1
        while self._waiting and self._has_room():
            waiter = self._waiting.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)


class _Slot:
    """One attempt's place at a gate, given back once."""

    def __init__(self, gate: RateGate) -> None:
        self.gate = gate
        self.kept = False
        self.given_back = False

    def give_back(self, error: CallError | None = None, *, ok: bool = True) -> None:
        if not self.given_back:
            self.given_back = True
            self.gate.release(error, ok=ok)


_SLOT: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("rate_gate_slot", default=None)


def keep_slot() -> Callable[[], None] | None:
    """Keep the current attempt's slot taken past the attempt's end; call the result to give it
    back (None outside a gated attempt).

    The reply is complete before the server has sent the body's end (see
    `streaming.Drains`), and a server that counts requests at once counts this one
    until then: a slot given back at once would let the next request in early, for a 429."""
    slot = _SLOT.get()
    if slot is None:
        return None
    slot.kept = True
    return slot.give_back


def gate_for(target: CallTarget, policy: RetrySettings) -> RateGate | None:
    """The run's gate for `target`'s provider and server (None when `policy` turns it off)."""
    if not policy.shared_limiter:
        return None
    loop = asyncio.get_running_loop()
    gates = _GATES.setdefault(loop, {})
    key = (target.provider, target.base_url)
    gate = gates.get(key)
    if gate is None:
        gate = gates[key] = RateGate(policy.retry_after_cap_s)
    return gate


def gated(
    call: Callable[[], Awaitable[T]], gate: RateGate | None, sleep: Sleep = asyncio.sleep
) -> Callable[[], Awaitable[T]]:
    """`call` made to wait at `gate` and to report its 429s there.

    The attempt after the call's own 429 skips the pause: the retry policy has just waited for
    the same `retry-after` (with an injected `sleep`, waiting twice would count twice)."""
    if gate is None:
        return call
    waited_own = False

    async def attempt() -> T:
        nonlocal waited_own
        await gate.acquire(sleep, pause=not waited_own)
        slot = _Slot(gate)
        token = _SLOT.set(slot)
        failure: CallError | None = None
        ok = False
        try:
            result = await call()
            ok = True
            return result
        except CallError as error:
            failure = error
            raise
        finally:
            _SLOT.reset(token)
            waited_own = failure is not None and failure.status == 429
            if not (ok and slot.kept):
                slot.give_back(failure, ok=ok)

    return attempt


FLEET_PAUSE_S = 1.0
"""The shared pause after a 429 that names no wait (no retry-after, no reset header)."""
_DURATION = re.compile(
    r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?"
    r"(?:(\d+(?:\.\d+)?)ms)?"
)
_RESETS = (
    "x-ratelimit-reset-requests",  # OpenAI: a duration, `1s`, `6m0s`, `20ms`
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-reset",  # Anthropic: an RFC 3339 time
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
)


def reset_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds until the longest of the rate-limit reset headers OpenAI and Anthropic send."""
    lowered = {key.lower(): value.strip() for key, value in headers.items()}
    found: list[float] = []
    for name in _RESETS:
        value = lowered.get(name)
        if not value:
            continue
        match = _DURATION.fullmatch(value)
        if match and any(match.groups()):
            h, m, s, ms = (float(part or 0) for part in match.groups())
            found.append(h * 3600 + m * 60 + s + ms / 1000)
            continue
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        found.append(max(0.0, (when - (now or datetime.now(UTC))).total_seconds()))
    return max(found) if found else None


def governed(
    call: Callable[[], Awaitable[T]],
    target: CallTarget,
    tokens: int,
    used: Callable[[T], int],
    policy: RetrySettings,
) -> Callable[[], Awaitable[T]]:
    """`call` let through the fleet's governor (DESIGN 25), when the run has one: each attempt
    waits out the provider's shared pause and takes its place in the shared request and token
    windows (`tokens`: the prompt estimate plus `max_tokens`); a 429 pauses every shard for its
    retry-after or reset time (capped by `retry_after_cap_s`), and the reply's real token
    count (`used`) replaces the estimate."""
    governor = current_governor()
    if governor is None:
        return call

    async def attempt() -> T:
        admission = await governor.admit(target.provider, target.model, tokens)
        try:
            result = await call()
        except CallError as error:
            if error.kind == "status" and error.status == 429:
                asked = parse_retry_after(error.headers)
                if asked is None:
                    asked = reset_after(error.headers)
                wait = FLEET_PAUSE_S if asked is None else asked
                await governor.rate_limited(target.provider, min(wait, policy.retry_after_cap_s))
            raise
        await governor.used(admission, used(result))
        return result

    return attempt
