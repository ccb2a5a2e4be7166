"""Live progress on the console while tasks run (DESIGN 17), so a long task is never silent.

- On a terminal or with `-v`: a `TURN` line per model call (turn, tokens and cost so far, the last
  tool the agent ran).
- Always (CI logs have no terminal): a heartbeat line per running task every
  `progress_interval_s` seconds (default 30; `AGENT_RUNNER_PROGRESS_INTERVAL_S`), and a `RETRY` line
  per retried model call with its reason and wait.
- `-q` turns all of it off; under `--output json` it goes to stderr with the other console lines.

`Progress.task` brackets one task (its heartbeat runs meanwhile); `Progress.watch` wraps the
task's event sink (the session log) so that the loop's own events drive the lines: the loop and
the log writer know nothing of the console.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from runner.llm import CHARS_PER_TOKEN, Activity, InFlight, track
from runner.report import format_cost, format_duration, format_tokens
from runner.run.turn import Budget

__all__ = ["DEFAULT_INTERVAL_S", "Progress", "ProgressEvents", "TaskProgress"]

DEFAULT_INTERVAL_S = 30.0
"""Seconds between heartbeat lines of one running task."""

_LABEL_WIDTH = len("INTERRUPTED")  # as the START/PASS/FAIL lines of runner.report.console
_REASON_LIMIT = 160


@dataclass
class TaskProgress:
    """What the console knows of one running task."""

    name: str
    """The task's name, as on its START line."""
    started: float
    """`time.monotonic()` when the task started."""
    budget: Budget | None = None
    """The task's budget (turns, usage, cost so far), once its session has one."""
    last_tool: str = ""
    """The tool the agent ran last."""
    in_flight: InFlight = field(default_factory=InFlight)
    """What the task waits for now: the model call streaming, the tool running."""

    def facts(self) -> str:
        """`turn=3 tokens=12.3k cost=$0.0123`, plus `last tool=NAME` once one ran."""
        budget = self.budget or Budget()
        tokens = format_tokens(budget.usage.total)
        text = f"turn={budget.turns} tokens={tokens} cost={format_cost(budget.cost_usd)}"
        return f"{text} last tool={self.last_tool}" if self.last_tool else text

    def beat(self) -> str:
        """The heartbeat's facts: `facts()` and what is in flight, each innermost activity
        after those it runs inside (`sub_agent 40.2s > model call 3.1s, ~210 tokens streamed`)."""
        now = time.monotonic()
        chains = [
            " > ".join(_activity(a, now) for a in leaf.chain()) for leaf in self.in_flight.leaves()
        ]
        return f"{self.facts()} in flight: {'; '.join(chains)}" if chains else self.facts()


def _activity(item: Activity, now: float) -> str:
    text = f"{item.what} {format_duration(now - item.since)}"
    if item.streamed_chars:
        text += f", ~{format_tokens(item.streamed_chars // CHARS_PER_TOKEN)} tokens streamed"
    return text


class _Modes(Protocol):
    """The console modes of a run (runner.run.app.RunOptions fits)."""

    @property
    def quiet(self) -> bool: ...

    @property
    def verbose(self) -> bool: ...


class Progress:
    """Progress lines of one run, written through `emit` (the run's redacting console)."""

    def __init__(
        self,
        emit: Callable[[str], None] = print,
        *,
        enabled: bool = False,
        per_turn: bool = False,
        interval_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        self._emit = emit
        self.enabled = enabled
        self.per_turn = enabled and per_turn
        self.interval_s = interval_s
        self._running: dict[str, TaskProgress] = {}

    @classmethod
    def for_console(
        cls, emit: Callable[[str], None], stream: TextIO, modes: _Modes, interval_s: float
    ) -> Progress:
        """Off under `-q`; a line per turn on a terminal or with `-v`; heartbeats and retries
        otherwise."""
        per_turn = modes.verbose or stream.isatty()
        return cls(emit, enabled=not modes.quiet, per_turn=per_turn, interval_s=interval_s)

    @asynccontextmanager
    async def task(self, name: str) -> AsyncIterator[TaskProgress]:
        """Track the task `name` while the block runs, with a heartbeat line every interval."""
        tracked = TaskProgress(name, time.monotonic())
        self._running[name] = tracked
        beat = asyncio.create_task(self._heartbeat(tracked)) if self.enabled else None
        try:
            with track(tracked.in_flight):
                yield tracked
        finally:
            if self._running.get(name) is tracked:
                del self._running[name]
            if beat is not None:
                beat.cancel()

    def watch(self, name: str, budget: Budget, events: Any) -> Any:
        """`events` with the task's turns, tool calls and retries also shown on the console;
        `events` itself when progress is off or the task is not tracked (a sub-agent's session)."""
        tracked = self._running.get(name)
        if not self.enabled or tracked is None:
            return events
        tracked.budget = budget
        return ProgressEvents(events, self, tracked)

    def watch_child(self, parent: str, agent: str, budget: Budget, events: Any) -> Any:
        """`watch` for a sub-agent's session: its turns and retries show under its parent's
        name (`parent > agent`)."""
        if not self.enabled or parent not in self._running:
            return events
        tracked = TaskProgress(f"{parent} > {agent}", time.monotonic(), budget)
        return ProgressEvents(events, self, tracked)

    def line(self, label: str, name: str, text: str) -> None:
        """One progress line, aligned with the START/PASS/FAIL lines."""
        self._emit(f"{label:<{_LABEL_WIDTH}}  {name}  {text}")

    async def _heartbeat(self, tracked: TaskProgress) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            elapsed = format_duration(time.monotonic() - tracked.started)
            self.line("RUNNING", tracked.name, f"{elapsed} {tracked.beat()}")


class ProgressEvents:
    """An event sink that passes every event on and shows turns, tool calls and retries.

    Only the three methods below are its own; everything else (messages, compactions,
    warnings, the writer's attributes) goes to the wrapped sink unchanged.
    """

    def __init__(self, events: Any, progress: Progress, tracked: TaskProgress) -> None:
        self._events = events
        self._progress = progress
        self._tracked = tracked

    def __getattr__(self, name: str) -> Any:
        return getattr(self._events, name)

    def model_call(self, turn: int, **fields: Any) -> None:
        self._events.model_call(turn, **fields)
        if self._progress.per_turn:
            self._progress.line("TURN", self._tracked.name, self._tracked.facts())

    def tool_call(self, turn: int, *, tool: str, **fields: Any) -> None:
        self._events.tool_call(turn, tool=tool, **fields)
        self._tracked.last_tool = tool

    def retry(
        self, turn: int, attempt: int, reason: str, status: int | None, wait_s: float
    ) -> None:
        self._events.retry(turn, attempt, reason, status, wait_s)
        why = " ".join(reason.split())
        if len(why) > _REASON_LIMIT:
            why = why[: _REASON_LIMIT - 1] + "…"
        code = f" (HTTP {status})" if status is not None else ""
        why = why.removeprefix(f"HTTP {status}: ")  # the reason may start with the code too
        self._progress.line(
            "RETRY",
            self._tracked.name,
            f"turn {turn} attempt {attempt}{code}: {why}; waiting {wait_s:.1f}s",
        )
