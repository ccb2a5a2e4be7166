"""The agent loop (DESIGN section 7): check limits, compact, call the model, run its tool calls.

It knows no SDK and no MCP: it gets an LLM, a tool executor and an event sink (Protocols), and is
steered by a small exception family. `LimitExceeded` ends a task as budget_exceeded, `AgentGaveUp`
as failed; provider and MCP errors pass through to the caller.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from runner.compaction import CompactionSink, Compactor
from runner.errors import ContextLengthError
from runner.llm.base import LLM, Message, Reply, RetryEvent, Usage
from runner.toolcall import (
    REMINDER,
    CallError,
    ToolCall,
    parse_reply,
    render_call_error,
    render_result,
)
from runner.toolspec import ATTEMPT_COMPLETION, ToolResult, ToolSpec

__all__ = [
    "AgentGaveUp",
    "Budget",
    "Completion",
    "EventSink",
    "LimitExceeded",
    "LimitKind",
    "RunBudget",
    "ToolExecutor",
    "run_loop",
]

LimitKind = Literal["turns", "tokens", "cost", "time", "run_cost"]
MAX_REPLIES_WITHOUT_TOOL = 3


class LimitExceeded(Exception):
    """A budget stopped the task; `kind` says which."""

    def __init__(self, kind: LimitKind, detail: str) -> None:
        super().__init__(detail)
        self.kind: LimitKind = kind


class AgentGaveUp(Exception):
    """The agent stopped calling tools: several replies in a row without a call."""


class ToolExecutor(Protocol):
    """Runs a tool by its exposed name; failures come back as error results, never raise."""

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...


class EventSink(CompactionSink, Protocol):
    """Where the loop reports what happens (the session log writer fits)."""

    def message(self, role: Literal["user", "assistant"], content: str, turn: int) -> None: ...

    def model_call(
        self,
        turn: int,
        *,
        latency_s: float,
        usage: Usage,
        cost_usd: float | None,
        retries: int,
        stop_reason: str | None,
        model: str,
    ) -> None: ...

    def tool_call(
        self,
        turn: int,
        *,
        tool: str,
        server: str,
        arguments: Mapping[str, Any],
        result: str,
        is_error: bool,
        duration_s: float,
    ) -> None: ...

    def retry(
        self, turn: int, attempt: int, reason: str, status: int | None, wait_s: float
    ) -> None: ...


@dataclass
class RunBudget:
    """The cost cap of a whole run, shared by its concurrent tasks (one event loop: no lock)."""

    max_cost_usd: float | None = None
    spent_usd: float = 0.0


@dataclass
class Budget:
    """One task's limits and what it has used so far; kept across success-check retries."""

    max_turns: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    run: RunBudget = field(default_factory=RunBudget)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    tool_calls: int = 0

    def check(self) -> None:
        """Raise LimitExceeded when a limit leaves no room for another model call."""
        if self.max_turns is not None and self.turns >= self.max_turns:
            raise LimitExceeded("turns", f"turn limit reached ({self.turns}/{self.max_turns})")
        if self.max_tokens is not None and self.usage.total >= self.max_tokens:
            raise LimitExceeded(
                "tokens", f"token limit reached ({self.usage.total}/{self.max_tokens})"
            )
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            raise LimitExceeded(
                "cost", f"cost limit reached (${self.cost_usd:.4f}/${self.max_cost_usd:.2f})"
            )
        cap = self.run.max_cost_usd
        if cap is not None and self.run.spent_usd >= cap:
            raise LimitExceeded(
                "run_cost", f"run cost cap reached (${self.run.spent_usd:.4f}/${cap:.2f})"
            )

    def charge(self, usage: Usage, cost_usd: float) -> None:
        self.usage = self.usage + usage
        self.cost_usd += cost_usd
        self.run.spent_usd += cost_usd


@dataclass(frozen=True)
class Completion:
    """What the agent reported with attempt_completion."""

    result: str
    status: Literal["success", "failure"]


async def run_loop(
    *,
    llm: LLM,
    system: str,
    messages: list[Message],
    tools: Sequence[ToolSpec],
    executor: ToolExecutor,
    events: EventSink,
    budget: Budget,
    compactor: Compactor,
    cost_of: Any,
    denied: Sequence[ToolSpec] = (),
) -> Completion:
    """Run turns until attempt_completion; `messages` is extended in place (the live context).

    `denied` are tools the policy forbids: not offered to the model, but a call of one is parsed
    as a call and goes to the executor, whose error result names the policy (DESIGN 7b).
    """
    by_name = {spec.name: spec for spec in denied}
    by_name.update({spec.name: spec for spec in tools})
    unlisted = {spec.name for spec in denied} - {spec.name for spec in tools}
    by_name[ATTEMPT_COMPLETION.name] = ATTEMPT_COMPLETION
    silent_replies = 0
    while True:
        budget.check()
        await compactor.maybe_compact(messages, turn=budget.turns)
        reply = await _call_model(llm, system, messages, events, budget, compactor, cost_of)
        turn = budget.turns
        messages.append(Message("assistant", reply.text))
        events.message("assistant", reply.text, turn)
        events.model_call(
            turn,
            latency_s=reply.latency_s,
            usage=reply.usage,
            cost_usd=cost_of(reply.usage),
            retries=reply.retries,
            stop_reason=reply.stop_reason,
            model=reply.model,
        )
        parsed = parse_reply(reply.text, by_name, unlisted=unlisted)
        if not parsed.items:
            silent_replies += 1
            if silent_replies >= MAX_REPLIES_WITHOUT_TOOL:
                raise AgentGaveUp(f"{silent_replies} replies in a row without a tool call")
            _add_user(messages, events, REMINDER, turn)
            continue
        silent_replies = 0
        completion, feedback = await _run_items(parsed.items, by_name, executor, events, budget)
        if completion is not None:
            return completion
        _add_user(messages, events, "\n\n".join(feedback), turn)


async def _call_model(
    llm: LLM,
    system: str,
    messages: list[Message],
    events: EventSink,
    budget: Budget,
    compactor: Compactor,
    cost_of: Any,
) -> Reply:
    turn = budget.turns + 1

    def on_retry(event: RetryEvent) -> None:
        events.retry(turn, event.attempt, event.reason, event.status, event.wait_s)

    try:
        reply = await llm.complete(system, messages, on_retry=on_retry)
    except ContextLengthError:
        # The provider counted more than our estimate: compact hard and retry once.
        await compactor.compact(messages, turn=budget.turns, force=True)
        reply = await llm.complete(system, messages, on_retry=on_retry)
    budget.turns = turn
    budget.charge(reply.usage, cost_of(reply.usage))
    return reply


async def _run_items(
    items: Sequence[ToolCall | CallError],
    by_name: dict[str, ToolSpec],
    executor: ToolExecutor,
    events: EventSink,
    budget: Budget,
) -> tuple[Completion | None, list[str]]:
    """Run the calls of one reply in order; stop at attempt_completion."""
    feedback: list[str] = []
    for item in items:
        if isinstance(item, CallError):
            feedback.append(render_call_error(item))
            continue
        if item.name == ATTEMPT_COMPLETION.name:
            failed = item.arguments.get("status") == "failure"
            status: Literal["success", "failure"] = "failure" if failed else "success"
            return Completion(str(item.arguments.get("result", "")), status), feedback
        started = time.monotonic()
        result = await executor.call(item.name, item.arguments)
        budget.tool_calls += 1
        events.tool_call(
            budget.turns,
            tool=item.name,
            server=by_name[item.name].server,
            arguments=item.arguments,
            result=result.text,
            is_error=result.is_error,
            duration_s=round(time.monotonic() - started, 4),
        )
        feedback.append(render_result(item.name, result))
    return None, feedback


def _add_user(messages: list[Message], events: EventSink, text: str, turn: int) -> None:
    messages.append(Message("user", text))
    events.message("user", text, turn)
