"""The agent loop (DESIGN section 7): check limits, compact, call the model, run its tool calls.

It knows no SDK and no MCP: it gets an LLM, a tool executor and an event sink (Protocols), and is
steered by a small exception family. `LimitExceeded` (raised by `Budget.check`) ends a task as
budget_exceeded, `AgentGaveUp` as failed; provider and MCP errors pass through to the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, Protocol

from runner.errors import ContextLengthError
from runner.llm import LLM, Message, NativeTools, Reply, RetryEvent, Usage, activity, reply_cap
from runner.prompt import RequestMeter, RequestTokens, ToolShelf
from runner.run.turn.batch import SEQUENTIAL, Concurrency, batches, gather_in_order
from runner.run.turn.budget import Budget
from runner.run.turn.compaction import CompactionSink, Compactor
from runner.run.turn.cutreply import context_text, cut_items, cut_notice, was_cut
from runner.run.turn.native import native_fields, native_items, results_message
from runner.run.turn.replybounds import DEFAULT_BOUNDS, ReplyBounds, ResultRoom, split_calls
from runner.run.turn.shelf import ShelfExecutor, announce_loaded, narrowed
from runner.toolcall import (
    ATTEMPT_COMPLETION,
    NATIVE_REMINDER,
    REMINDER,
    CallError,
    ToolCall,
    ToolResult,
    ToolSpec,
    parse_reply,
    render_call_error,
    render_result,
)

__all__ = [
    "AgentGaveUp",
    "Completion",
    "EventSink",
    "ToolExecutor",
    "WindDownNotice",
    "record_reply",
    "run_loop",
]

MAX_REPLIES_WITHOUT_TOOL = 3


class AgentGaveUp(Exception):
    """The agent stopped calling tools: several replies in a row without a call."""


class WindDownNotice(Protocol):
    """Tells the agent, once, that a limit is near (runner.run.turn.winddown.WindDown fits)."""

    def before_call(self, messages: list[Message], events: EventSink) -> None: ...


class ToolExecutor(Protocol):
    """Runs a tool by its exposed name; failures come back as error results, never raise."""

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...


class EventSink(CompactionSink, Protocol):
    """Where the loop reports what happens (the session log writer fits)."""

    def message(
        self,
        role: Literal["user", "assistant"],
        content: str,
        turn: int,
        *,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        tool_results: Sequence[Mapping[str, Any]] | None = None,
        context: str | None = None,
    ) -> None: ...

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
        request: Mapping[str, int] | None = None,
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
        child_session_id: str | None = None,
        call_id: str | None = None,
        loaded_tools: Sequence[str] | None = None,
    ) -> None: ...

    def retry(
        self, turn: int, attempt: int, reason: str, status: int | None, wait_s: float
    ) -> None: ...


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
    concurrency: Concurrency = SEQUENTIAL,
    wind_down: WindDownNotice | None = None,
    bounds: ReplyBounds = DEFAULT_BOUNDS,
    native: NativeTools | None = None,
    meter: RequestMeter | None = None,
    shelf: ToolShelf | None = None,
) -> Completion:
    """Run turns until attempt_completion; `messages` is extended in place (the live context).

    `denied` are tools the policy forbids: not offered to the model, but a call of one is parsed
    as a call and goes to the executor, whose error result names the policy (DESIGN 7b).
    `wind_down` may add a "finish now" notice to the context before a model call (DESIGN 12).
    `native` (tool_mode: native) offers the tools through the provider's tool API; the reply's
    calls come from there instead of its text, and each gets a result by its id (DESIGN 16).
    `meter` measures each request by part for its `model_call` record (DESIGN 28). `shelf`:
    the deferred tools; `find_tools` loads them, a native request lists only the loaded ones,
    and after a compaction the loaded ones are announced again (DESIGN 28).
    """
    by_name = {spec.name: spec for spec in denied}
    by_name.update({spec.name: spec for spec in tools})
    unlisted = {spec.name for spec in denied} - {spec.name for spec in tools}
    by_name[ATTEMPT_COMPLETION.name] = ATTEMPT_COMPLETION
    if shelf:
        executor = ShelfExecutor(executor, shelf, native is not None, by_name)

    def announce() -> None:
        announce_loaded(messages, events, shelf, native is not None, by_name, budget.turns)

    silent_replies = 0
    while True:
        budget.check()
        if wind_down is not None:
            wind_down.before_call(messages, events)
        compactions = getattr(compactor, "compactions", 0)  # a test double may not count
        await compactor.maybe_compact(messages, turn=budget.turns)
        if getattr(compactor, "compactions", 0) != compactions:
            announce()
        reply, request = await _call_model(
            llm,
            system,
            messages,
            events,
            budget,
            compactor,
            cost_of,
            narrowed(native, shelf),
            meter,
            announce,
        )
        turn = budget.turns
        if native is not None:
            items = native_items(reply, by_name, unlisted)
            last_cut = bool(items) and isinstance(items[-1], CallError)
        else:
            parsed = parse_reply(reply.text, by_name, unlisted=unlisted)
            items, last_cut = parsed.items, parsed.truncated
        record_reply(reply, turn, messages, events, cost_of, context_text(reply, items), request)
        # A call cut at the output limit is not run; a reply with only that ran nothing.
        found, only_cut = cut_items(reply, items, last_cut=last_cut, events=events, turn=turn)
        if not found or only_cut:
            silent_replies += 1
            if silent_replies >= MAX_REPLIES_WITHOUT_TOOL:
                raise AgentGaveUp(f"{silent_replies} replies in a row without a tool call")
        else:
            silent_replies = 0
        if not found:
            reminder = NATIVE_REMINDER if native else REMINDER
            _add_user(messages, events, cut_notice() if was_cut(reply) else reminder, turn)
            continue
        items, refused = split_calls(found, bounds.max_calls)
        room = ResultRoom(bounds.max_results_chars)
        completion, feedback = await _run_items(
            items, by_name, executor, events, budget, concurrency, room
        )
        if completion is not None:
            return completion
        if native is not None:
            _add(messages, events, results_message(messages[-1], feedback, refused or ""), turn)
            continue
        texts = [text for _, text, _ in feedback]
        _add_user(messages, events, "\n\n".join([*texts, *filter(None, [refused])]), turn)


def record_reply(
    reply: Reply,
    turn: int,
    messages: list[Message],
    events: EventSink,
    cost_of: Any,
    context: str | None = None,
    request: RequestTokens | None = None,
) -> None:
    """Add the model's reply to the context and log it with its `model_call` event. `context`:
    the text the context keeps instead of the whole reply (which the log keeps); `request`: the
    request's tokens by part, when it was measured."""
    if context is None:
        _add(messages, events, Message("assistant", reply.text, reply.calls), turn)
    else:
        messages.append(Message("assistant", context, reply.calls))
        fields = native_fields(messages[-1])
        events.message("assistant", reply.text, turn, context=context, **fields)
    events.model_call(
        turn,
        latency_s=reply.latency_s,
        usage=reply.usage,
        cost_usd=cost_of(reply.usage),
        retries=reply.retries,
        stop_reason=reply.stop_reason,
        model=reply.model,
        **({"request": request.as_json()} if request is not None else {}),
    )


async def _call_model(
    llm: LLM,
    system: str,
    messages: list[Message],
    events: EventSink,
    budget: Budget,
    compactor: Compactor,
    cost_of: Any,
    native: NativeTools | None = None,
    meter: RequestMeter | None = None,
    after_compaction: Callable[[], None] | None = None,
) -> tuple[Reply, RequestTokens | None]:
    turn = budget.turns + 1
    # Only a native request names tools: other providers need not know the keyword.
    tools: dict[str, Any] = {"tools": native} if native is not None else {}

    def on_retry(event: RetryEvent) -> None:
        events.retry(turn, event.attempt, event.reason, event.status, event.wait_s)

    # Held against the run's cost cap while the call runs: prompt estimated, output at its max.
    prompt = compactor.estimate(messages)
    estimate = cost_of(Usage(prompt, budget.reserve_output_tokens))
    # A token limit counts the prompt and bounds the reply: the task ends within one reply of
    # it, not one prompt plus a whole `max_tokens` past it.
    with budget.reservation(estimate), reply_cap(budget.reply_room(prompt)):
        ticket = await budget.fleet_reserve(estimate)  # the fleet's cap too (DESIGN 25)
        cost = 0.0
        try:
            request = _measure(meter, messages, native)
            try:
                with activity("model call"):
                    reply = await llm.complete(system, messages, on_retry=on_retry, **tools)
            except ContextLengthError:
                # The provider counted more than our estimate (or saw an overflow the server
                # could not word): compact hard, to the window it may just have learned, and
                # retry once.
                await _follow_window(compactor, events)
                await compactor.compact(messages, turn=budget.turns, force=True)
                if after_compaction is not None:
                    after_compaction()
                request = _measure(meter, messages, native)
                with activity("model call"):
                    reply = await llm.complete(system, messages, on_retry=on_retry, **tools)
            cost = cost_of(reply.usage)
        finally:
            await budget.fleet_settle(ticket, cost)
    await _follow_window(compactor, events)
    budget.turns = turn
    budget.charge(reply.usage, cost_of(reply.usage))
    if request is not None:
        budget.requested = budget.requested + request
    return reply, request


def _measure(
    meter: RequestMeter | None, messages: Sequence[Message], native: NativeTools | None
) -> RequestTokens | None:
    if meter is None:
        return None
    return meter.measure(messages, native.specs if native is not None else None)


async def _follow_window(compactor: Compactor, events: EventSink) -> None:
    """Compact to the window the provider learned from the server's replies (DESIGN 23), and
    say so in the log."""
    window = await compactor.follow_window()
    warn = getattr(events, "warning", None)
    if window is not None and callable(warn):
        warn(
            f"context window: {window} tokens from now on, learned from the server's replies"
            " (it does not say its window; set `models: {NAME: {context_window: N}}` in the"
            " config to give it)"
        )


async def _run_items(
    items: Sequence[ToolCall | CallError],
    by_name: dict[str, ToolSpec],
    executor: ToolExecutor,
    events: EventSink,
    budget: Budget,
    concurrency: Concurrency,
    room: ResultRoom,
) -> tuple[Completion | None, list[tuple[ToolCall | CallError, str, bool]]]:
    """Run the calls of one reply in order (a batch of them at once); stop at attempt_completion.
    The feedback: each item with the text the model gets and whether it is an error."""
    feedback: list[tuple[ToolCall | CallError, str, bool]] = []
    for group in batches(items, concurrency):
        item = group[0]
        if isinstance(item, CallError):
            feedback.append((item, render_call_error(item), True))
            continue
        if item.name == ATTEMPT_COMPLETION.name:
            failed = item.arguments.get("status") == "failure"
            status: Literal["success", "failure"] = "failure" if failed else "success"
            return Completion(str(item.arguments.get("result", "")), status), feedback
        calls = [call for call in group if isinstance(call, ToolCall)]
        jobs = [partial(_timed_call, executor, call) for call in calls]
        for call, (result, duration_s) in zip(
            calls, await gather_in_order(jobs, concurrency.limit_of(item)), strict=True
        ):
            budget.tool_calls += 1
            budget.denied_calls += int(result.denied)
            events.tool_call(
                budget.turns,
                tool=call.name,
                server=by_name[call.name].server,
                arguments=call.arguments if result.arguments is None else result.arguments,
                result=result.text,
                is_error=result.is_error,
                duration_s=duration_s,
                **result.log_fields,
                **({"call_id": call.call_id} if call.call_id else {}),
            )
            text = room.fit(call.name, render_result(call.name, result))
            feedback.append((call, text, result.is_error))
    return None, feedback


async def _timed_call(executor: ToolExecutor, call: ToolCall) -> tuple[ToolResult, float]:
    started = time.monotonic()
    with activity(f"tool {call.name}"):
        result = await executor.call(call.name, call.arguments)
    return result, round(time.monotonic() - started, 4)


def _add_user(messages: list[Message], events: EventSink, text: str, turn: int) -> None:
    _add(messages, events, Message("user", text), turn)


def _add(messages: list[Message], events: EventSink, message: Message, turn: int) -> None:
    """Add `message` to the context and the log (native calls and results with it)."""
    messages.append(message)
    events.message(message.role, message.content, turn, **native_fields(message))
