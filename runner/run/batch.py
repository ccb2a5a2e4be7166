"""Which calls of one reply run at the same time (DESIGN section 13; meant to grow for issue 18).

A reply's calls run in order, except that consecutive calls of a tool the `Concurrency` names
form one batch that runs at once (at most `limit` at a time). Any other call is a barrier: it
runs alone, after everything before it and before everything after it, so no call ever moves
relative to another. Results always come back in call order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from runner.toolcall import ATTEMPT_COMPLETION, CallError, ToolCall

__all__ = ["SEQUENTIAL", "Concurrency", "batches", "gather_in_order"]

T = TypeVar("T")


@dataclass(frozen=True)
class Concurrency:
    """The tools whose consecutive calls may run at the same time, and how many at once."""

    tools: frozenset[str] = frozenset()
    """Tool names (as the model calls them) that may share a batch."""
    limit: int = 1
    """Calls of one batch that run at the same time."""

    def joins(self, item: ToolCall | CallError) -> bool:
        return isinstance(item, ToolCall) and item.name in self.tools


SEQUENTIAL = Concurrency()
"""Every call on its own, in order: the default."""


def batches(
    items: Sequence[ToolCall | CallError], concurrency: Concurrency
) -> Iterator[list[ToolCall | CallError]]:
    """The reply's items in order, grouped: a run of consecutive batchable calls is one group,
    any other item a group of its own. attempt_completion is never batched."""
    group: list[ToolCall | CallError] = []
    for item in items:
        if concurrency.joins(item) and item.name != ATTEMPT_COMPLETION.name:  # type: ignore[union-attr]
            group.append(item)
            continue
        if group:
            yield group
            group = []
        yield [item]
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
