"""The Redis (or Valkey) store: each decision of `runner.fleet.state` as one Lua script.

The only module that imports redis-py (the optional `fleet` extra). The scripts are registered
with `register_script` (EVALSHA, loaded again after a server restart) and read the time from the
server (`TIME`), so shards on hosts whose clocks differ still agree on windows and pauses. A
run's keys share the hash tag `{run}`, so they live in one slot of a cluster, and expire a week
after the run's last decision.
"""

from __future__ import annotations

import contextlib
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from runner.fleet.config import StoreDown, safe_url
from runner.fleet.state import EPSILON_S, KEY_TTL_S, Bucket

__all__ = ["RedisStore"]


_PRELUDE = """
local p = ARGV[1]
local KEY_TTL = __KEY_TTL__
local EPSILON = __EPSILON__
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function touch(shard)
  if shard ~= '' then redis.call('HSET', p .. 'sh', shard, now) end
  for _, k in ipairs({'st', 'res', 'sh'}) do redis.call('EXPIRE', p .. k, KEY_TTL) end
end
local function live_reserved()
  local sum = 0
  local all = redis.call('HGETALL', p .. 'res')
  for i = 1, #all, 2 do
    local amount, expires = string.match(all[i + 1], '(%S+) (%S+)')
    if tonumber(expires) <= now then
      redis.call('HDEL', p .. 'res', all[i])
      redis.call('HINCRBY', p .. 'st', 'expired', 1)
    else
      sum = sum + tonumber(amount)
    end
  end
  return sum
end
"""

_RESERVE = """
-- ARGV: prefix, shard, rid, amount, cap (negative: none), ttl
touch(ARGV[2])
local reserved = live_reserved()
local spent = tonumber(redis.call('HGET', p .. 'st', 'spent') or '0')
local amount = tonumber(ARGV[4])
local cap = tonumber(ARGV[5])
if cap >= 0 then
  redis.call('HSET', p .. 'st', 'cap', ARGV[5])
  if spent + reserved + amount > cap then
    redis.call('HINCRBY', p .. 'st', 'refused', 1)
    return {0, tostring(spent), tostring(reserved)}
  end
end
redis.call('HSET', p .. 'res', ARGV[3], ARGV[4] .. ' ' .. tostring(now + tonumber(ARGV[6])))
redis.call('HINCRBY', p .. 'st', 'calls', 1)
return {1, tostring(spent), tostring(reserved + amount)}
"""

_SETTLE = """
-- ARGV: prefix, shard, rid, cost
touch(ARGV[2])
redis.call('HDEL', p .. 'res', ARGV[3])
redis.call('HINCRBYFLOAT', p .. 'st', 'spent', ARGV[4])
return 1
"""

_ADMIT = """
-- ARGV: prefix, shard, rid, tokens, scope, then (glob, rpm, tpm, window) per bucket
touch(ARGV[2])
local pause = tonumber(redis.call('HGET', p .. 'pause', ARGV[5]) or '0')
if pause > now then return tostring(pause - now) end
local tokens = tonumber(ARGV[4])
local wait = 0
for i = 6, #ARGV, 4 do
  local rq, tk = p .. 'rq:' .. ARGV[i], p .. 'tk:' .. ARGV[i]
  local rpm, tpm, window = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  for _, old in ipairs(redis.call('ZRANGEBYSCORE', rq, '-inf', now - window)) do
    redis.call('HDEL', tk, old)
  end
  redis.call('ZREMRANGEBYSCORE', rq, '-inf', now - window)
  local n = redis.call('ZCARD', rq)
  if rpm > 0 and n >= rpm then
    local leaving = redis.call('ZRANGE', rq, n - rpm, n - rpm, 'WITHSCORES')
    wait = math.max(wait, tonumber(leaving[2]) + window - now)
  end
  if tpm > 0 and n > 0 then
    local used = 0
    for _, v in ipairs(redis.call('HVALS', tk)) do used = used + tonumber(v) end
    if used > 0 and used + tokens > tpm then
      local ordered = redis.call('ZRANGE', rq, 0, -1, 'WITHSCORES')
      local left = used
      for j = 1, #ordered, 2 do
        left = left - tonumber(redis.call('HGET', tk, ordered[j]) or '0')
        if left + tokens <= tpm or left <= 0 then
          wait = math.max(wait, tonumber(ordered[j + 1]) + window - now)
          break
        end
      end
    end
  end
end
if wait > 0 then return tostring(math.max(wait, EPSILON)) end
for i = 6, #ARGV, 4 do
  local rq, tk = p .. 'rq:' .. ARGV[i], p .. 'tk:' .. ARGV[i]
  redis.call('ZADD', rq, now, ARGV[3])
  redis.call('HSET', tk, ARGV[3], ARGV[4])
  local window = math.ceil(tonumber(ARGV[i + 3])) + 1
  redis.call('EXPIRE', rq, window)
  redis.call('EXPIRE', tk, window)
end
return '0'
"""

_TOKENS = """
-- ARGV: prefix, rid, tokens, then the globs: the real count, and the request restamped now
for i = 4, #ARGV do
  local tk = p .. 'tk:' .. ARGV[i]
  if redis.call('HEXISTS', tk, ARGV[2]) == 1 then
    redis.call('HSET', tk, ARGV[2], ARGV[3])
    redis.call('ZADD', p .. 'rq:' .. ARGV[i], 'XX', 'GT', now, ARGV[2])
  end
end
return 1
"""

_PAUSE = """
-- ARGV: prefix, shard, scope, seconds
touch(ARGV[2])
redis.call('HINCRBY', p .. 'st', 'rate_limited', 1)
local until_ = math.max(
  tonumber(redis.call('HGET', p .. 'pause', ARGV[3]) or '0'), now + tonumber(ARGV[4]))
redis.call('HSET', p .. 'pause', ARGV[3], tostring(until_))
redis.call('EXPIRE', p .. 'pause', KEY_TTL)
return tostring(until_ - now)
"""

_WAITED = """
-- ARGV: prefix, seconds
touch('')
redis.call('HINCRBY', p .. 'st', 'waits', 1)
redis.call('HINCRBYFLOAT', p .. 'st', 'wait_s', ARGV[2])
return 1
"""

_STATUS = """
-- ARGV: prefix
local reserved = 0
local count = 0
local all = redis.call('HGETALL', p .. 'res')
for i = 1, #all, 2 do
  local amount, expires = string.match(all[i + 1], '(%S+) (%S+)')
  if tonumber(expires) > now then reserved = reserved + tonumber(amount); count = count + 1 end
end
local st = redis.call('HGETALL', p .. 'st')
table.insert(st, 'reserved'); table.insert(st, tostring(reserved))
table.insert(st, 'reservations'); table.insert(st, tostring(count))
table.insert(st, 'stale'); table.insert(st, tostring(#all / 2 - count))
table.insert(st, 'shards'); table.insert(st, tostring(redis.call('HLEN', p .. 'sh')))
local paused = 0
local pauses = redis.call('HVALS', p .. 'pause')
for _, u in ipairs(pauses) do paused = math.max(paused, tonumber(u) - now) end
table.insert(st, 'paused'); table.insert(st, tostring(paused))
table.insert(st, 'now'); table.insert(st, tostring(now))
return st
"""


def _prelude() -> str:
    return _PRELUDE.replace("__KEY_TTL__", str(KEY_TTL_S)).replace("__EPSILON__", repr(EPSILON_S))


class RedisStore:
    """A run's state in Redis; each method is one script, atomic on the server."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self._url = safe_url(url)
        try:
            self._client: aioredis.Redis = aioredis.Redis.from_url(
                url,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                decode_responses=True,
            )
        except ValueError as error:
            raise StoreDown(f"governor url {self._url}: {error}") from None
        self._scripts = {
            name: self._client.register_script(_prelude() + body)
            for name, body in (
                ("reserve", _RESERVE),
                ("settle", _SETTLE),
                ("admit", _ADMIT),
                ("tokens", _TOKENS),
                ("pause", _PAUSE),
                ("waited", _WAITED),
                ("status", _STATUS),
            )
        }

    async def _run(self, name: str, run: str, *args: str | int | float) -> Any:
        try:
            return await self._scripts[name](args=[f"agent-runner:{{{run}}}:", *args])
        except ResponseError as error:
            # The server refused the script (an old Redis, a read-only replica, no scripting).
            raise StoreDown(f"governor store {self._url}: the server refused: {error}") from None
        except (RedisError, OSError) as error:
            raise StoreDown(f"governor store {self._url}: {type(error).__name__}") from None

    async def reserve(
        self, run: str, shard: str, rid: str, amount: float, cap: float | None, ttl_s: float
    ) -> tuple[bool, float, float]:
        cap_arg = -1.0 if cap is None else cap
        ok, spent, reserved = await self._run(
            "reserve", run, shard, rid, repr(amount), repr(cap_arg), repr(ttl_s)
        )
        return bool(int(ok)), float(spent), float(reserved)

    async def settle(self, run: str, shard: str, rid: str, cost: float) -> None:
        await self._run("settle", run, shard, rid, repr(cost))

    async def admit(
        self, run: str, shard: str, rid: str, scope: str, buckets: list[Bucket], tokens: int
    ) -> float:
        flat: list[str | int | float] = [scope]
        for glob, rpm, tpm, window_s in buckets:
            flat += [glob, rpm, tpm, repr(window_s)]
        return float(await self._run("admit", run, shard, rid, tokens, *flat))

    async def tokens_used(self, run: str, rid: str, globs: list[str], tokens: int) -> None:
        if globs:
            await self._run("tokens", run, rid, tokens, *globs)

    async def pause(self, run: str, shard: str, scope: str, seconds: float) -> float:
        return float(await self._run("pause", run, shard, scope, repr(seconds)))

    async def waited(self, run: str, seconds: float) -> None:
        await self._run("waited", run, repr(seconds))

    async def status(self, run: str) -> dict[str, Any]:
        flat = await self._run("status", run)
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
        cap = raw.get("cap")
        return {
            "spent_usd": round(float(raw.get("spent", 0)), 6),
            "reserved_usd": round(float(raw["reserved"]), 6),
            "reservations": int(raw["reservations"]),
            "max_cost_usd": float(cap) if cap is not None else None,
            "calls": int(raw.get("calls", 0)),
            "refused": int(raw.get("refused", 0)),
            "expired": int(raw.get("expired", 0)) + int(float(raw["stale"])),
            "shards": int(raw["shards"]),
            "waits": int(raw.get("waits", 0)),
            "wait_s": round(float(raw.get("wait_s", 0)), 3),
            "rate_limited": int(raw.get("rate_limited", 0)),
            "paused_s": round(float(raw["paused"]), 3),
        }

    async def aclose(self) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self._client.aclose()
