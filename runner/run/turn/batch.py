"""Which calls of one reply run at the same time (DESIGN sections 13 and 16).

A reply's calls run in order, except that consecutive calls of one `Lane`'s tools form one batch
that runs at once (at most the lane's `limit` at a time): sub_agent calls are one lane, calls of
read-only tools another. Any other call is a barrier: it runs alone, after everything before it
and before everything after it, so no call ever moves relative to another. Results always come
back in call order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from runner.toolcall import ATTEMPT_COMPLETION, CallError, ToolCall

__all__ = ["SEQUENTIAL", "Concurrency", "Lane", "batches", "gather_in_order"]

T = TypeVar("T")


@dataclass(frozen=True)
class Lane:
    """Tools whose consecutive calls may run at the same time, and how many at once."""

    tools: frozenset[str] = frozenset()
    """Tool names (as the model calls them) that may share a batch."""
    limit: int = 1
    """Calls of one batch that run at the same time."""


@dataclass(frozen=True)
class Concurrency:
    """The lanes of a session: a batch holds calls of one lane only."""

    lanes: tuple[Lane, ...] = ()
    """Disjoint lanes; a tool in none of them is a barrier."""

    def lane(self, item: ToolCall | CallError) -> Lane | None:
        """The lane of `item`, or None for a barrier (attempt_completion always is one)."""
        if not isinstance(item, ToolCall) or item.name == ATTEMPT_COMPLETION.name:
            return None
        return next((lane for lane in self.lanes if item.name in lane.tools), None)

    def limit_of(self, item: ToolCall | CallError) -> int:
        """How many calls of `item`'s batch run at once."""
        lane = self.lane(item)
        return 1 if lane is None else lane.limit

    def with_lane(self, lane: Lane) -> Concurrency:
        """These lanes and `lane` (dropped when it names no tool)."""
        return Concurrency((*self.lanes, lane)) if lane.tools else self


SEQUENTIAL = Concurrency()
"""Every call on its own, in order: the default."""


def batches(
    items: Sequence[ToolCall | CallError], concurrency: Concurrency
) -> Iterator[list[ToolCall | CallError]]:
    """The reply's items in order, grouped: a run of consecutive calls of one lane is one group,
    any other item a group of its own."""
    group: list[ToolCall | CallError] = []
    current: Lane | None = None
    for item in items:
        lane = concurrency.lane(item)
        if group and (lane is None or lane is not current):
            yield group
            group = []
        if lane is None:
            yield [item]
            continue
        group.append(item)
        current = lane
    if group:
        yield group


async def gather_in_order(jobs: Sequence[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Run `jobs` at once, at most `limit` at a time; their results in the jobs' order.

    A job that raises cancels the others (asyncio.TaskGroup), and so does a cancellation of the
    caller: every job has ended (its clean-up done) before this returns or raises.
    """
    if len(jobs) == 1:
        return [await jobs[0]()]
    gate = asyncio.Semaphore(max(1, limit))

    async def gated(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(gated(job)) for job in jobs]
    return [task.result() for task in tasks]
