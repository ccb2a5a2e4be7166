"""Batching the calls of one reply (runner.run.turn.batch): order kept, batches run at once."""

from __future__ import annotations

import asyncio

from runner.run.turn.batch import Concurrency, Lane, batches, gather_in_order
from runner.toolcall import CallError, ToolCall

AGENTS = Concurrency((Lane(frozenset({"sub_agent"}), limit=4),))
READS = Lane(frozenset({"read_file", "list_files"}), limit=8)
BOTH = AGENTS.with_lane(READS)


def names(groups: list[list[ToolCall | CallError]]) -> list[list[str]]:
    return [[c.name if isinstance(c, ToolCall) else f"!{c.tool}" for c in g] for g in groups]


def calls(*tools: str) -> list[ToolCall | CallError]:
    return [ToolCall(t, {}) for t in tools]


def test_consecutive_batchable_calls_form_one_group() -> None:
    items = calls("read_file", "sub_agent", "sub_agent", "write_to_file")
    assert names(list(batches(items, AGENTS))) == [
        ["read_file"],
        ["sub_agent", "sub_agent"],
        ["write_to_file"],
    ]


def test_any_other_call_is_a_barrier() -> None:
    items = [*calls("sub_agent", "read_file", "sub_agent"), CallError("x", "bad")]
    assert names(list(batches(items, AGENTS))) == [
        ["sub_agent"],
        ["read_file"],
        ["sub_agent"],
        ["!x"],
    ]


def test_sequential_makes_every_call_its_own_group() -> None:
    items = calls("sub_agent", "sub_agent")
    assert names(list(batches(items, Concurrency()))) == [["sub_agent"], ["sub_agent"]]


def test_consecutive_reads_form_one_group_and_a_write_is_a_barrier() -> None:
    items = calls("read_file", "list_files", "write_to_file", "read_file", "read_file")
    assert names(list(batches(items, BOTH))) == [
        ["read_file", "list_files"],
        ["write_to_file"],
        ["read_file", "read_file"],
    ]


def test_calls_of_two_lanes_never_share_a_group() -> None:
    items = calls("read_file", "sub_agent", "sub_agent", "read_file")
    assert names(list(batches(items, BOTH))) == [
        ["read_file"],
        ["sub_agent", "sub_agent"],
        ["read_file"],
    ]


def test_attempt_completion_is_a_barrier_even_in_a_lane() -> None:
    lanes = Concurrency((Lane(frozenset({"read_file", "attempt_completion"}), 4),))
    items = calls("read_file", "attempt_completion", "read_file")
    assert names(list(batches(items, lanes))) == [
        ["read_file"],
        ["attempt_completion"],
        ["read_file"],
    ]


def test_each_lane_has_its_own_limit_and_a_barrier_runs_alone() -> None:
    assert BOTH.limit_of(ToolCall("read_file", {})) == 8
    assert BOTH.limit_of(ToolCall("sub_agent", {})) == 4
    assert BOTH.limit_of(ToolCall("write_to_file", {})) == 1
    assert BOTH.limit_of(CallError("read_file", "bad")) == 1


def test_a_lane_without_tools_is_not_added() -> None:
    assert AGENTS.with_lane(Lane(frozenset(), 8)) is AGENTS


def test_gather_in_order_runs_at_once_and_keeps_the_jobs_order() -> None:
    async def scenario() -> tuple[list[str], int]:
        both_started = asyncio.Event()
        running = 0
        peak = 0

        def job(name: str, wait_for_other: bool) -> object:
            async def run() -> str:
                nonlocal running, peak
                running += 1
                peak = max(peak, running)
                if running == 2:
                    both_started.set()
                if wait_for_other:  # the first job can end only once the second has started
                    await asyncio.wait_for(both_started.wait(), 10)
                running -= 1
                return name

            return run

        results = await gather_in_order([job("a", True), job("b", False)], limit=2)  # type: ignore[list-item]
        return results, peak

    results, peak = asyncio.run(scenario())
    assert results == ["a", "b"] and peak == 2


def test_gather_in_order_holds_to_its_limit() -> None:
    async def scenario() -> int:
        running = peak = 0

        async def run() -> int:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0)
            running -= 1
            return 1

        await gather_in_order([run, run, run, run], limit=2)
        return peak

    assert asyncio.run(scenario()) == 2


def test_every_call_after_a_malformed_one_is_still_grouped() -> None:
    bad, worse = CallError("x", "bad"), CallError("y", "worse")
    items = [*calls("sub_agent"), bad, *calls("sub_agent", "sub_agent"), worse, *calls("read_file")]
    assert names(list(batches(items, BOTH))) == [
        ["sub_agent"],
        ["!x"],
        ["sub_agent", "sub_agent"],
        ["!y"],
        ["read_file"],
    ]


def test_gather_in_order_of_one_job_returns_its_result() -> None:
    async def run() -> str:
        return "only"

    assert asyncio.run(gather_in_order([run], limit=4)) == ["only"]


def test_gather_in_order_with_a_limit_below_two_runs_one_job_at_a_time() -> None:
    async def scenario(limit: int) -> int:
        running = peak = 0

        async def run() -> int:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0)
            running -= 1
            return 1

        assert await gather_in_order([run, run, run], limit=limit) == [1, 1, 1]
        return peak

    assert asyncio.run(scenario(1)) == 1
    assert asyncio.run(scenario(0)) == 1  # no limit is read as one, never as none at all
