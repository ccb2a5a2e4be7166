"""Keep the context under the model's window (DESIGN section 7).

First old tool results are cleared (the last few turns stay whole); if that is not enough, older
turns are summarised with one model call. The first user message (the task) is always kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from runner.llm import (
    CHARS_PER_TOKEN,
    LLM,
    Message,
    MessageChars,
    Usage,
    activity,
    context_window_of,
)
from runner.run.turn.budget import Budget
from runner.run.turn.native import cleared, transcript_text

__all__ = ["CLEARED", "CompactionSink", "Compactor", "estimate_tokens"]

CLEARED = "[Tool results of this turn were cleared to save context.]"
SUMMARY_PROMPT = (
    "You compress the history of an autonomous coding session so that it can continue in a "
    "smaller context. Write a factual summary of the conversation below: what the task is, what "
    "has been done (files read and changed, commands run and their outcomes), what was learned, "
    "and what remains to do. Keep file paths, names and error messages exact. No preamble."
)
_LOW_WATER = 0.5
"""Clearing tool results suffices only when it leaves the prompt under this share of the limit."""


def estimate_tokens(system: str, messages: list[Message]) -> int:
    """Approximate prompt tokens of a request."""
    return (len(system) + sum(m.chars for m in messages)) // CHARS_PER_TOKEN


class CompactionSink(Protocol):
    """Where compactions are reported (the session log writer fits)."""

    def compaction(
        self,
        turn: int,
        *,
        kind: Literal["clear_tool_results", "summary"],
        before_tokens: int,
        after_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        summary: str | None = None,
    ) -> None: ...


class Compactor:
    """Decides when to compact and does it, writing a `compaction` event each time."""

    def __init__(
        self,
        *,
        llm: LLM,
        system: str,
        context_window: int | None,
        events: CompactionSink,
        budget: Budget,
        cost_of: Callable[[Usage], float],
        ratio: float = 0.8,
        keep_turns: int = 3,
    ) -> None:
        self._llm = llm
        self._system = system
        self._window = context_window
        self._events = events
        self._budget = budget
        self._cost_of = cost_of
        self._ratio = ratio
        self._keep_messages = 2 * keep_turns
        self._chars = MessageChars()
        self.compactions = 0
        """Compactions done so far (clearing and summary count one each)."""

    async def follow_window(self) -> int | None:
        """Take the model's window as the provider knows it now (one that learns it from the
        replies changes it); the new window when it changed, else None."""
        window = await context_window_of(self._llm)
        if window is None or window == self._window:
            return None
        self._window = window
        return window

    def _limit(self) -> int | None:
        return int(self._window * self._ratio) if self._window else None

    async def maybe_compact(self, messages: list[Message], *, turn: int) -> None:
        """Compact when the estimated prompt passes the ratio of the context window."""
        limit = self._limit()
        if limit is None or self.estimate(messages) <= limit:
            return
        if estimate_tokens(self._system, messages[:1]) > limit:
            # The system prompt and the task alone fill the window: no compaction can help, and
            # summarising anyway would cost a model call every turn and erase the agent's last
            # steps. The provider's context-length error (which forces a compaction) decides.
            return
        await self.compact(messages, turn=turn)

    def estimate(self, messages: list[Message]) -> int:
        """`estimate_tokens` of the system prompt and `messages`, counting only the messages
        appended since the last call (`MessageChars`)."""
        return (len(self._system) + self._chars.count(messages)) // CHARS_PER_TOKEN

    async def compact(self, messages: list[Message], *, turn: int, force: bool = False) -> None:
        """Clear old tool results, then summarise if still over half the limit (always, when
        `force`)."""
        self._chars.reset()  # messages are replaced below: count afresh next time
        before = estimate_tokens(self._system, messages)
        if self._clear_tool_results(messages):
            after = estimate_tokens(self._system, messages)
            self._record(turn, "clear_tool_results", before, after, messages)
            limit = self._limit()
            # Clearing must leave real room (half the limit), or the next turns compact again
            # and again for less each time while the message count grows without bound.
            if not force and limit is not None and after <= limit * _LOW_WATER:
                return
            before = after
        summary = await self._summarise(messages)
        if summary is not None:
            after = estimate_tokens(self._system, messages)
            self._record(turn, "summary", before, after, messages, summary)

    def _clear_tool_results(self, messages: list[Message]) -> bool:
        changed = False
        # Index 0 is the task itself; the tail stays whole so the agent keeps its footing.
        for index in range(1, max(1, len(messages) - self._keep_messages)):
            message = messages[index]
            # Only where the placeholder is shorter: clearing must never grow the context.
            if message.role == "user" and message.chars > len(CLEARED) * (1 + len(message.results)):
                messages[index] = cleared(message)
                changed = True
        return changed

    async def _summarise(self, messages: list[Message]) -> str | None:
        # The kept tail must start with a user message so that roles keep alternating after the
        # summary (an assistant message) replaces messages[1:cut].
        start = max(3, len(messages) - self._keep_messages)
        cut = next((i for i in range(start, len(messages)) if messages[i].role == "user"), None)
        if cut is None:
            return None  # too little history to summarise
        older = messages[1:cut]
        transcript = "\n\n".join(f"{m.role.upper()}:\n{transcript_text(m)}" for m in older)
        if self._window:
            # The summary request must fit the window too (a local server's may be 8k): half of
            # it for the history, its newest part, so that the task and the summary fit beside.
            room = max(0, self._window // 2 * CHARS_PER_TOKEN - len(messages[0].content))
            if len(transcript) > room:
                transcript = "[... the oldest part is left out ...]\n" + transcript[-room:]
        request = [Message("user", f"TASK:\n{messages[0].content}\n\nHISTORY:\n{transcript}")]
        # Reserved against the fleet's cap like any model call (DESIGN 25; None: no governor).
        worst = Usage(self.estimate(request), self._budget.reserve_output_tokens)
        ticket = await self._budget.fleet_reserve(self._cost_of(worst))
        cost = 0.0
        try:
            with activity("model call (compaction summary)"):
                reply = await self._llm.complete(SUMMARY_PROMPT, request)
            cost = self._cost_of(reply.usage)
        finally:
            await self._budget.fleet_settle(ticket, cost)
        # One counted model call: its tokens and cost go to the task's budget.
        self._budget.charge(reply.usage, cost)
        summary = reply.text.strip()
        messages[1:cut] = [Message("assistant", f"Summary of the session so far:\n{summary}")]
        # Native results whose calls were summarised away go on as text (providers refuse them).
        messages[2] = messages[2].plain()
        return summary

    def _record(
        self,
        turn: int,
        kind: Literal["clear_tool_results", "summary"],
        before: int,
        after: int,
        messages: list[Message],
        summary: str | None = None,
    ) -> None:
        self.compactions += 1
        self._events.compaction(
            turn,
            kind=kind,
            before_tokens=before,
            after_tokens=after,
            messages=[m.record() for m in messages],
            summary=summary,
        )
