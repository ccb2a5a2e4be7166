"""A fake model server for the fleet's tests: one server for many runner processes, answering
each request by the shard that sent it (a `shardN` marker in the task's prompt) and counting
arrivals with their times, so a test can check what reached the provider and when.

`answer(shard, index)` picks the step for a shard's `index`-th request (from 0); it may block
(a held request, a barrier) since every request has its own handler thread.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.model_server import FakeModelServer, Step, _first_user_text

__all__ = ["Arrival", "FleetModelServer", "most_in_window"]

_SHARD = re.compile(r"shard\d+")


@dataclass(frozen=True)
class Arrival:
    """One request as it reached the server."""

    at: float
    """`time.time()` when it arrived (the clock redis-server's TIME reads too)."""
    shard: str
    index: int
    """The shard's how-manieth request, from 0."""
    step: Step
    """What the server answered."""


class FleetModelServer(FakeModelServer):
    """The fake model server, scripted per shard and counting arrivals (a context manager)."""

    def __init__(self, answer: Callable[[str, int], Step]) -> None:
        super().__init__()
        self._answer = answer
        self._lock = threading.Condition()
        self.arrivals: list[Arrival] = []
        self._state.script = self._script

    def _script(self, body: Any) -> Step:
        found = _SHARD.search(_first_user_text(body))
        shard = found.group(0) if found else "?"
        at = time.time()
        with self._lock:
            index = sum(1 for a in self.arrivals if a.shard == shard)
            placeholder = Arrival(at, shard, index, Step())
            self.arrivals.append(placeholder)
            self._lock.notify_all()
        step = self._answer(shard, index)
        with self._lock:
            self.arrivals[self.arrivals.index(placeholder)] = Arrival(at, shard, index, step)
        return step

    def count(self, shard: str | None = None) -> int:
        with self._lock:
            return sum(1 for a in self.arrivals if shard is None or a.shard == shard)

    def wait_for(self, predicate: Callable[[list[Arrival]], bool], timeout: float) -> bool:
        """Block until `predicate(arrivals)` holds; False after `timeout` seconds."""
        with self._lock:
            return self._lock.wait_for(lambda: predicate(self.arrivals), timeout)


def most_in_window(times: list[float], window_s: float) -> int:
    """The most arrivals any window of `window_s` seconds holds."""
    ordered = sorted(times)
    most, start = 0, 0
    for end, at in enumerate(ordered):
        while at - ordered[start] >= window_s:
            start += 1
        most = max(most, end - start + 1)
    return most
