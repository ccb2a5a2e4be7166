"""Compaction rules that the end-to-end runs depend on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from runner.llm.base import Message, Reply, RetryEvent, Usage
from runner.run.turn.budget import Budget
from runner.run.turn.compaction import CLEARED, Compactor
from runner.settings import ModelInfo


class CountingLLM:
    """Answers every call with a short summary and counts the calls."""

    provider = "fake"
    model = "fake"
    info: ModelInfo | None = None

    def __init__(self) -> None:
        self.calls = 0
        self.requests: list[list[Message]] = []

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> Reply:
        self.calls += 1
        self.requests.append(list(messages))
        return Reply("a summary", Usage(10, 2), "stop", 0.0, 0, "fake")


class Events:
    def __init__(self) -> None:
        self.kinds: list[str] = []

    def compaction(self, turn: int, **fields: Any) -> None:
        self.kinds.append(fields["kind"])


def compactor(llm: CountingLLM, events: Events, system: str, window: int) -> Compactor:
    return Compactor(
        llm=llm,
        system=system,
        context_window=window,
        events=events,
        budget=Budget(),
        cost_of=lambda usage: 0.0,
    )


def history(turns: int, result: str) -> list[Message]:
    messages = [Message("user", "the task")]
    for turn in range(turns):
        messages += [Message("assistant", f"call {turn}"), Message("user", result)]
    return messages


@pytest.mark.anyio
async def test_clearing_leaves_tool_results_shorter_than_the_placeholder_alone() -> None:
    llm, events = CountingLLM(), Events()
    messages = history(6, "ok")
    before = list(messages)
    await compactor(llm, events, "s" * 400, window=100).compact(messages, turn=6)
    assert CLEARED not in [m.content for m in messages]
    assert "clear_tool_results" not in events.kinds
    assert len(messages) < len(before)  # the summary still ran


@pytest.mark.anyio
async def test_no_proactive_compaction_when_the_system_prompt_alone_fills_the_window() -> None:
    llm, events = CountingLLM(), Events()
    messages = history(6, "x" * 200)
    await compactor(llm, events, "s" * 4000, window=1000).maybe_compact(messages, turn=6)
    assert llm.calls == 0 and events.kinds == []
    assert len(messages) == 13


@pytest.mark.anyio
async def test_a_forced_compaction_still_summarises_when_the_window_is_too_small() -> None:
    llm, events = CountingLLM(), Events()
    messages = history(6, "x" * 200)
    await compactor(llm, events, "s" * 4000, window=1000).compact(messages, turn=6, force=True)
    assert events.kinds == ["clear_tool_results", "summary"]
    assert messages[0] == Message("user", "the task")


@pytest.mark.anyio
async def test_the_running_estimate_matches_a_full_count_through_appends_and_compactions() -> None:
    from runner.run.turn.compaction import estimate_tokens

    llm, events = CountingLLM(), Events()
    box = compactor(llm, events, "s" * 40, window=10_000)
    messages = history(3, "r" * 50)
    for turn in range(40):
        assert box.estimate(messages) == estimate_tokens("s" * 40, messages)
        messages += [Message("assistant", f"call {turn}"), Message("user", "r" * (turn * 37))]
        if turn % 9 == 8:
            await box.compact(messages, turn=turn)  # replaces messages in place
    assert box.estimate(messages) == estimate_tokens("s" * 40, messages)
    messages[-1] = Message("user", "replaced by someone else")  # not an append: counted afresh
    assert box.estimate(messages) == estimate_tokens("s" * 40, messages)


@pytest.mark.anyio
async def test_the_summary_request_fits_the_window_keeping_the_newest_history() -> None:
    llm, events = CountingLLM(), Events()
    window = 2000
    messages = [Message("user", "the task")]
    for turn in range(12):  # assistant text is never cleared: only a summary can shrink it
        messages += [Message("assistant", f"step {turn} " + "a" * 2000), Message("user", "ok")]
    await compactor(llm, events, "system", window).compact(messages, turn=12, force=True)
    (request,) = llm.requests
    text = request[0].content
    assert len(text) // 4 <= window // 2 + 50
    assert "the oldest part is left out" in text
    assert text.startswith("TASK:\nthe task")
    assert "step 9 " in text and "step 0 " not in text
