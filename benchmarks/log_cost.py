"""Cost of the session log and the per-turn bookkeeping over a long session, in process.

The real `run_loop`, `Compactor` and `SessionLogWriter` run a session of `turns` tool turns against
an in-process model (no network) and a no-op tool, with a small context window so that compaction
is on. Every call into the log writer is timed and attributed to its turn, so the cost of an
append early in the session can be set against one at its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runner.llm.base import Message, Reply, RetryEvent, Usage
from runner.redact import Redactor
from runner.run.turn.budget import Budget, LimitExceeded
from runner.run.turn.compaction import SUMMARY_PROMPT, Compactor
from runner.run.turn.loop import run_loop
from runner.sessionlog.writer import SessionLogWriter
from runner.toolcall.spec import ToolResult, ToolSpec
from tests.fakes.model_server import FINISH, READ_NOTES

__all__ = ["measure_log_cost"]

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file of the workspace.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "The file."}},
        "required": ["path"],
    },
    server="workspace",
)


class _Model:
    provider = "fake"
    model = "fake"
    info = None

    def __init__(self, turns: int) -> None:
        self._turns = turns
        self.calls = 0

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> Reply:
        if system == SUMMARY_PROMPT:
            return Reply("The agent read notes.txt many times.", Usage(100, 10), "stop", 0, 0, "f")
        self.calls += 1
        text = FINISH if self.calls > self._turns else READ_NOTES
        return Reply(text, Usage(1000, 20), "stop", 0.0, 0, "fake")


class _Tool:
    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult("benchmark notes\n" * 4)


class _TimedLog:
    """The writer, with the time of every append charged to the loop's current turn."""

    def __init__(self, writer: SessionLogWriter, budget: Budget) -> None:
        self._writer = writer
        self._budget = budget
        self.by_turn: dict[int, list[float]] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._writer, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                self.by_turn.setdefault(self._budget.turns, []).append(spent)

        return timed


async def _session(out: Path, turns: int, context_window: int, system: str) -> dict[str, Any]:
    budget = Budget(max_turns=turns)
    writer = SessionLogWriter.create(
        out,
        {
            "run_id": "bench",
            "task": {"name": "long"},
            "model": "fake:fake",
            "system_prompt": system,
        },
        Redactor(["sk-bench-secret"]),
    )
    log = _TimedLog(writer, budget)
    compactor = Compactor(
        llm=_Model(turns),
        system=system,
        context_window=context_window,
        events=log,
        budget=budget,
        cost_of=lambda usage: 0.0,
    )
    turn_started: dict[int, float] = {}
    turn_spent: dict[int, float] = {}
    model = _Model(turns)
    original = model.complete

    async def complete(system: str, messages: Sequence[Message], **kw: Any) -> Reply:
        # Everything between two model calls is the runner's own work for that turn.
        now = time.perf_counter()
        if budget.turns in turn_started:
            turn_spent[budget.turns] = now - turn_started[budget.turns]
        reply = await original(system, messages, **kw)
        turn_started[budget.turns + 1] = time.perf_counter()
        return reply

    model.complete = complete  # type: ignore[method-assign]
    messages = [Message("user", "Read notes.txt and report.")]
    with contextlib.suppress(LimitExceeded):
        await run_loop(
            llm=model,
            system=system,
            messages=messages,
            tools=[READ_FILE],
            executor=_Tool(),
            events=log,
            budget=budget,
            compactor=compactor,
            cost_of=lambda usage: 0.0,
        )
    writer.close()
    size = writer.path.stat().st_size
    return {"appends": log.by_turn, "turn_work": turn_spent, "log_bytes": size}


def _window(data: dict[int, list[float]], first: int, last: int) -> list[float]:
    return [t for turn in range(first, last + 1) for t in data.get(turn, [])]


def measure_log_cost(turns: int, system: str, context_window: int = 8_000) -> dict[str, Any]:
    """Per-append and per-turn costs (seconds) near the start (turns 5..15) and the end."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = asyncio.run(_session(Path(tmp), turns, context_window, system))
    start = (5, min(15, turns))
    end = (max(1, turns - 10), turns - 1)
    appends, work = raw["appends"], raw["turn_work"]
    start_appends = _window(appends, *start)
    end_appends = _window(appends, *end)
    turn_work = {k: [v] for k, v in work.items()}
    return {
        "turns": turns,
        "append_start_s": statistics.median(start_appends),
        "append_end_s": statistics.median(end_appends),
        "append_max_end_s": max(end_appends),
        "appends_per_turn_start": len(start_appends) / (start[1] - start[0] + 1),
        "appends_per_turn_end": len(end_appends) / (end[1] - end[0] + 1),
        "turn_work_start_s": statistics.median(_window(turn_work, *start)),
        "turn_work_end_s": statistics.median(_window(turn_work, *end)),
        "log_bytes": raw["log_bytes"],
    }
