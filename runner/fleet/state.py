"""The governor's decisions on one run's state, in Python: the memory and file stores apply them
under their own lock; `redis_store` makes the same decisions in Lua (tests hold them equal).

A run's state is a JSON-ready mapping: what was spent, the reservations under way (with when
each expires), the shards seen, the shared pause, and per limit glob the requests of the window
with their tokens. Every function takes `now` (seconds since the epoch) and changes the state in
place: a store calls one of them per decision, inside one lock.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Bucket",
    "admit",
    "new_state",
    "pause",
    "reserve",
    "settle",
    "status",
    "tokens_used",
    "waited",
]

Bucket = tuple[str, int, int, float]
"""One limit a request counts against: its glob, rpm (0: none), tpm (0: none), window in s."""

KEY_TTL_S = 7 * 24 * 3600
"""A run's state is dropped a week after its last decision (every store)."""
EPSILON_S = 0.001
"""The least wait returned for a request that does not fit (a float that rounds to 0)."""


def new_state(now: float) -> dict[str, Any]:
    """The state of a run no shard has touched yet."""
    return {
        "created": now,
        "spent": 0.0,
        "cap": None,
        "calls": 0,
        "refused": 0,
        "expired": 0,
        "rate_limited": 0,
        "waits": 0,
        "wait_s": 0.0,
        "pauses": {},
        "reservations": {},
        "shards": {},
        "windows": {},
    }


def _live_reserved(state: dict[str, Any], now: float) -> float:
    """Drop the expired reservations (a killed shard's); the sum of the others."""
    held = state["reservations"]
    for rid in [rid for rid, (_, expires) in held.items() if expires <= now]:
        del held[rid]
        state["expired"] += 1
    return float(sum(amount for amount, _ in held.values()))


def reserve(
    state: dict[str, Any],
    now: float,
    shard: str,
    rid: str,
    amount: float,
    cap: float | None,
    ttl_s: float,
) -> tuple[bool, float, float]:
    """Hold `amount` against `cap` unless what is spent and held leaves no room for it.
    Returns (held, spent, reserved after)."""
    state["shards"][shard] = now
    reserved = _live_reserved(state, now)
    spent = float(state["spent"])
    if cap is not None:
        state["cap"] = cap
        if spent + reserved + amount > cap:
            state["refused"] += 1
            return False, spent, reserved
    state["reservations"][rid] = [amount, now + ttl_s]
    state["calls"] += 1
    return True, spent, reserved + amount


def settle(state: dict[str, Any], now: float, shard: str, rid: str, cost: float) -> None:
    """Replace a reservation by the call's real cost (its reservation may have expired)."""
    state["shards"][shard] = now
    state["reservations"].pop(rid, None)
    state["spent"] = float(state["spent"]) + cost


def _window(state: dict[str, Any], glob: str, now: float, window_s: float) -> dict[str, Any]:
    """The requests of `glob` still in its window, `{rid: [time, tokens]}`, oldest first."""
    entries: dict[str, Any] = state["windows"].setdefault(glob, {})
    for rid in [rid for rid, (at, _) in entries.items() if at <= now - window_s]:
        del entries[rid]
    return entries


def _bucket_wait(entries: dict[str, Any], bucket: Bucket, now: float, tokens: int) -> float:
    _, rpm, tpm, window_s = bucket
    wait = 0.0
    ordered = sorted(entries.values(), key=lambda entry: float(entry[0]))
    if rpm and len(ordered) >= rpm:
        # The request that must leave the window before one more fits.
        wait = max(wait, float(ordered[len(ordered) - rpm][0]) + window_s - now)
    used = sum(int(entry[1]) for entry in ordered)
    if tpm and used > 0 and used + tokens > tpm:
        left = used
        for at, counted in ordered:
            left -= int(counted)
            if left + tokens <= tpm or left <= 0:
                wait = max(wait, float(at) + window_s - now)
                break
    return wait


def admit(
    state: dict[str, Any],
    now: float,
    shard: str,
    rid: str,
    scope: str,
    buckets: list[Bucket],
    tokens: int,
) -> float:
    """Admit one request to `scope`'s provider: 0.0 when it may go now (and it is counted in
    every bucket), else the seconds to wait (the shared pause of `scope`, or until a window has
    room) before asking again."""
    state["shards"][shard] = now
    pause_left = float(state["pauses"].get(scope, 0.0)) - now
    if pause_left > 0:
        return pause_left
    windows = [_window(state, bucket[0], now, bucket[3]) for bucket in buckets]
    wait = max(
        (
            _bucket_wait(entries, bucket, now, tokens)
            for entries, bucket in zip(windows, buckets, strict=True)
        ),
        default=0.0,
    )
    if wait > 0:
        return max(wait, EPSILON_S)
    for entries in windows:
        entries[rid] = [now, tokens]
    return 0.0


def tokens_used(state: dict[str, Any], now: float, rid: str, globs: list[str], tokens: int) -> None:
    """A request's reply is in: its real token count replaces its estimate in its windows, and
    it counts from now on (the provider counted it from its arrival, which was after it was
    admitted: restamped at the reply, it leaves our window no sooner than the provider's)."""
    for glob in globs:
        entry = state["windows"].get(glob, {}).get(rid)
        if entry is not None:
            entry[0] = max(float(entry[0]), now)
            entry[1] = tokens


def pause(state: dict[str, Any], now: float, shard: str, scope: str, seconds: float) -> float:
    """A 429 from `scope`'s provider: every shard's requests to it wait until `now + seconds`
    (a longer pause already set stands). Returns the pause left."""
    state["shards"][shard] = now
    state["rate_limited"] += 1
    until = max(float(state["pauses"].get(scope, 0.0)), now + seconds)
    state["pauses"][scope] = until
    return until - now


def waited(state: dict[str, Any], seconds: float) -> None:
    """A shard waited `seconds` for the pause or a window."""
    state["waits"] += 1
    state["wait_s"] = float(state["wait_s"]) + seconds


def status(state: dict[str, Any], now: float) -> dict[str, Any]:
    """The run's figures, as `fleet status` and summary.json show them."""
    held = state["reservations"]
    live = [amount for amount, expires in held.values() if expires > now]
    return {
        "spent_usd": round(float(state["spent"]), 6),
        "reserved_usd": round(float(sum(live)), 6),
        "reservations": len(live),
        "max_cost_usd": state["cap"],
        "calls": int(state["calls"]),
        "refused": int(state["refused"]),
        "expired": int(state["expired"]) + len(held) - len(live),
        "shards": len(state["shards"]),
        "waits": int(state["waits"]),
        "wait_s": round(float(state["wait_s"]), 3),
        "rate_limited": int(state["rate_limited"]),
        "paused_s": round(max([0.0, *(float(u) - now for u in state["pauses"].values())]), 3),
    }
