"""Winding a task down at a limit (DESIGN 12): warn at about 90 %, then ask once for a report.

At `NOTICE_RATIO` of any limit (turns, tokens, cost, time) the agent is told, once, that it must
finish. When a limit is reached anyway, one last model call, with tools off, asks for a final
report; the task still ends `budget_exceeded`, with that report as its result, and its log stays
resumable with a bigger budget.

The last call costs at most one more turn: the context once more as input and at most the
provider's `max_output_tokens` as output. It is not made when the run's own cost cap (`run_cost`)
is what stopped the task, or when that cap has no room left: the run cap is the operator's hard
ceiling over every task, and each concurrent task's last call would pass it again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from runner.errors import RunnerError
from runner.llm import LLM, Message, Usage
from runner.run.turn.budget import Budget, LimitExceeded
from runner.run.turn.loop import Completion, EventSink, record_reply
from runner.run.turn.native import append_user
from runner.toolcall import ATTEMPT_COMPLETION, ToolCall, parse_reply

__all__ = [
    "FINAL_REPORT_TIMEOUT_S",
    "NOTICE_RATIO",
    "WindDown",
    "final_report_request",
]

NOTICE_RATIO = 0.9
"""Share of a limit at which the agent is told to finish."""
FINAL_REPORT_TIMEOUT_S = 60.0
"""Longest wait for the final report; a task with a time limit gets a tenth of it, at least 5 s."""

_Used = tuple[Literal["turns", "tokens", "cost", "time"], float, float]


class ReportSink(EventSink, Protocol):
    """The session log as the wind-down writes to it."""

    def warning(self, message: str) -> None: ...


def final_report_request(detail: str) -> str:
    """The user message of the last call, with tools off."""
    return (
        f"The task has reached a limit and must stop now: {detail}. Tools are off: no tool call "
        "in this reply will run. Reply with your final report as plain text: what you did, what "
        "you checked and how, what is still left to do, and where to pick up. The run may be "
        "resumed later with a bigger budget."
    )


@dataclass
class WindDown:
    """One task's wind-down: the 90 % notice and the final report at the limit."""

    budget: Budget
    timeout_s: float | None = None
    """The task's wall-time limit, when it has one."""
    started: float = field(default_factory=time.monotonic)
    """When the task's clock started (monotonic)."""
    told: bool = False
    """The notice has been given (it is given at most once per session)."""

    def _used(self) -> list[_Used]:
        budget = self.budget
        used: list[_Used] = []
        if budget.max_turns is not None:
            # The coming call is the last one: always say so, even when 90 % rounds to the limit.
            cap = min(budget.max_turns * NOTICE_RATIO, budget.max_turns - 1)
            used.append(("turns", budget.turns, cap))
        if budget.max_tokens is not None:
            used.append(("tokens", budget.usage.total, budget.max_tokens * NOTICE_RATIO))
        if budget.max_cost_usd is not None:
            used.append(("cost", budget.cost_usd, budget.max_cost_usd * NOTICE_RATIO))
        if self.timeout_s is not None:
            elapsed = time.monotonic() - self.started
            used.append(("time", elapsed, self.timeout_s * NOTICE_RATIO))
        return used

    def notice(self) -> str | None:
        """The "finish now" text when a limit is near and it was not given yet, else None."""
        if self.told or self.budget.turns == 0:
            return None
        near = [(kind, value, cap) for kind, value, cap in self._used() if value >= cap]
        if not near:
            return None
        self.told = True
        used = "; ".join(self._phrase(kind) for kind, _, _ in near)
        return (
            f"Budget notice: {used}. Finish now: wrap up the work in progress and call "
            "attempt_completion with your report in the next reply or two. If you cannot finish, "
            "report what is done and what is left."
        )

    def _phrase(self, kind: str) -> str:
        budget = self.budget
        if kind == "turns" and budget.max_turns is not None:
            left = max(budget.max_turns - budget.turns, 0)
            return f"{left} of your {budget.max_turns} turns left"
        if kind == "tokens":
            return f"{budget.usage.total} of your {budget.max_tokens} tokens used"
        if kind == "cost":
            return f"${budget.cost_usd:.4f} of your ${budget.max_cost_usd:.2f} budget used"
        elapsed = time.monotonic() - self.started
        return f"{elapsed:.0f}s of your {self.timeout_s:g}s time limit used"

    def before_call(self, messages: list[Message], events: EventSink) -> None:
        """Add the notice to the context when it is due (the loop calls this before each turn)."""
        text = self.notice()
        if text is None:
            return
        native = append_user(messages, text)
        events.message("user", text, self.budget.turns, **native)

    def final_report_allowed(self, limit: LimitExceeded) -> bool:
        """Whether the last call may be made after `limit` stopped the task."""
        run = self.budget.run
        if limit.kind in ("run_cost", "tokens") or not limit.final_report:
            # Hard limits: the report's request would send the whole prompt again past them.
            return False
        if run.governor is not None and run.governor.max_cost_usd is not None:
            return False  # it would go unreserved past the fleet's cap (DESIGN 25)
        return run.max_cost_usd is None or run.spent_usd < run.max_cost_usd

    def report_timeout_s(self) -> float:
        if self.timeout_s is None:
            return FINAL_REPORT_TIMEOUT_S
        return min(FINAL_REPORT_TIMEOUT_S, max(5.0, self.timeout_s / 10))

    async def final_report(
        self,
        limit: LimitExceeded,
        llm: LLM,
        system: str,
        messages: list[Message],
        events: ReportSink,
        cost_of: Callable[[Usage], float],
        say: Callable[[str], None],
    ) -> Completion | None:
        """Ask once, tools off, for the agent's final report (the task's result, with status
        failure); None when it cannot be had."""
        if not self.final_report_allowed(limit):
            return None
        request = final_report_request(str(limit))
        native = append_user(messages, request)
        turn = self.budget.turns + 1
        events.message("user", request, self.budget.turns, **native)
        try:
            async with asyncio.timeout(self.report_timeout_s()):
                reply = await llm.complete(system, messages)
        except (RunnerError, TimeoutError) as error:
            why = str(error) or (
                f"the request for it got no reply within {self.report_timeout_s():g} s"
            )
            line = f"no final report after the limit: {why} (the limit: {limit})"
            events.warning(line)
            say(f"warning: {line}")
            return None
        self.budget.turns = turn
        self.budget.charge(reply.usage, cost_of(reply.usage))
        record_reply(reply, turn, messages, events, cost_of)
        # The reason says why the task's turns are one over the limit (`turns=4 ... (3/3)`).
        limit.args = (f"{limit}; then one last call, tools off, for the final report",)
        return Completion(_report_text(reply.text), "failure")


def _report_text(text: str) -> str:
    """The report: an attempt_completion's result when the model called it anyway, else the
    reply's text."""
    parsed = parse_reply(text, {ATTEMPT_COMPLETION.name: ATTEMPT_COMPLETION})
    for item in parsed.items:
        if isinstance(item, ToolCall) and item.name == ATTEMPT_COMPLETION.name:
            return str(item.arguments.get("result", "")).strip() or text.strip()
    return text.strip()
