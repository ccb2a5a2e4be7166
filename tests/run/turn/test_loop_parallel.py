"""A batch of read-only calls in the loop: whatever order the calls finish in, results, log events
and the turn's result cap follow the call order (DESIGN section 16)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from runner.llm.base import Message
from runner.run.turn.batch import Concurrency, Lane
from runner.run.turn.budget import Budget
from runner.run.turn.loop import run_loop
from runner.run.turn.replybounds import ReplyBounds
from runner.toolcall import ToolResult, ToolSpec
from tests.run.turn.test_loop import Compactor, Events, ScriptedLLM, done

pytestmark = pytest.mark.anyio

READ = ToolSpec(
    "peek",
    "Read.",
    {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]},
    server="tools",
    read_only=True,
)


def peek(n: int) -> str:
    return f"<peek>\n<n>{n}</n>\n</peek>"


class LastFirst:
    """Every call waits until all calls after it have finished: they end in reverse order, which
    only calls that run at the same time can do (bounded: a lone call waits at most 10 s)."""

    def __init__(self, count: int) -> None:
        self.finished: list[int] = []
        self.count = count
        self.changed = anyio.Event()

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        n = int(arguments["n"])
        with anyio.fail_after(10):
            while not all(m in self.finished for m in range(n + 1, self.count)):
                await self.changed.wait()
        self.finished.append(n)
        self.changed.set()
        self.changed = anyio.Event()
        return ToolResult(f"result {n} " + "x" * 200)


async def test_calls_that_end_in_reverse_come_back_in_call_order_under_the_turn_cap() -> None:
    executor, events = LastFirst(3), Events()
    llm = ScriptedLLM("\n".join(peek(n) for n in range(3)), done())
    await run_loop(
        llm=llm,
        system="system",
        messages=[Message("user", "the task")],
        tools=[READ],
        executor=executor,
        events=events,
        budget=Budget(),
        compactor=Compactor(),  # type: ignore[arg-type]
        cost_of=lambda usage: 0.0,
        concurrency=Concurrency((Lane(frozenset({"peek"}), 3),)),
        bounds=ReplyBounds(max_calls=50, max_results_chars=600),
    )
    assert executor.finished == [2, 1, 0]
    assert [fields["arguments"]["n"] for _, fields in events.tool_calls] == ["0", "1", "2"]
    feedback = llm.seen[1][-1]
    assert feedback.index("result 0") < feedback.index("result 1")
    assert "result 2" not in feedback and "left out" in feedback  # the cap hit the last call


class Counting:
    """Counts the calls under way at once (each yields to the others a few times)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        for _ in range(5):
            await anyio.sleep(0)
        self.in_flight -= 1
        return ToolResult("ok")


async def test_a_batch_runs_at_most_its_lanes_limit_of_calls_at_once() -> None:
    executor = Counting()
    await run_loop(
        llm=ScriptedLLM("\n".join(peek(n) for n in range(5)), done()),
        system="system",
        messages=[Message("user", "the task")],
        tools=[READ],
        executor=executor,
        events=Events(),
        budget=Budget(),
        compactor=Compactor(),  # type: ignore[arg-type]
        cost_of=lambda usage: 0.0,
        concurrency=Concurrency((Lane(frozenset({"peek"}), 2),)),
    )
    assert executor.most == 2
