"""The loop and its budgets (DESIGN section 7): limits, accumulation, the reminder counter, the
context-length retry and what each event carries. The model is a scripted LLM (the seam the loop
takes), the tools a recording executor: no SDK and no MCP below the loop."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest

from runner.errors import ContextLengthError
from runner.llm.base import Message, Reply, RetryEvent, Usage
from runner.run.turn.budget import Budget, LimitExceeded, RunBudget
from runner.run.turn.loop import AgentGaveUp, Completion, run_loop
from runner.settings import ModelInfo
from runner.toolcall import REMINDER, ToolResult, ToolSpec

pytestmark = pytest.mark.anyio

ECHO = ToolSpec(
    "echo",
    "Echo the text.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    server="tools",
)
DENIED = ToolSpec("wipe", "Wipe.", {"type": "object", "properties": {}}, server="danger")


def echo(text: str = "hi") -> str:
    return f"<echo>\n<text>{text}</text>\n</echo>"


def done(result: str = "finished", status: str = "success") -> str:
    return (
        f"<attempt_completion>\n<result>{result}</result>\n<status>{status}</status>\n"
        "</attempt_completion>"
    )


DEFAULT_USAGE = Usage(10, 5)
CUT = "CUT:"
"""A script step starting so is a reply that stopped at the output limit."""


class ScriptedLLM:
    """Replies from a script; an exception in the script is raised instead of replying."""

    provider = "fake"
    model = "fake-model"
    info: ModelInfo | None = None

    def __init__(self, *script: str | Exception, usage: Usage = DEFAULT_USAGE) -> None:
        self.script = list(script)
        self.usage = usage
        self.seen: list[list[str]] = []

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> Reply:
        self.seen.append([m.content for m in messages])
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        if on_retry is not None and step.startswith("RETRY"):
            on_retry(RetryEvent(1, "rate limited", 429, 0.5))
            step = step.removeprefix("RETRY")
        stop = "length" if step.startswith(CUT) else "end_turn"  # cut at the output limit
        return Reply(step.removeprefix(CUT), self.usage, stop, 0.25, 2, "fake-model-2025")


class Executor:
    def __init__(self, delay_s: float = 0.0, is_error: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.delay_s = delay_s
        self.is_error = is_error

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        if self.delay_s:
            await anyio.sleep(self.delay_s)
        return ToolResult(f"{name} said {arguments}", is_error=self.is_error)


class Events:
    def __init__(self) -> None:
        self.messages: list[tuple[str, str, int]] = []
        self.message_fields: list[dict[str, Any]] = []
        self.model_calls: list[tuple[int, dict[str, Any]]] = []
        self.tool_calls: list[tuple[int, dict[str, Any]]] = []
        self.retries: list[tuple[Any, ...]] = []
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        self.warnings.append(message)

    def message(self, role: str, content: str, turn: int, **fields: Any) -> None:
        self.messages.append((role, content, turn))
        self.message_fields.append(fields)

    def model_call(self, turn: int, **fields: Any) -> None:
        self.model_calls.append((turn, fields))

    def tool_call(self, turn: int, **fields: Any) -> None:
        self.tool_calls.append((turn, fields))

    def retry(self, *args: Any) -> None:
        self.retries.append(args)

    def compaction(self, turn: int, **fields: Any) -> None:
        pass


class Compactor:
    def __init__(self) -> None:
        self.proactive: list[int] = []
        self.forced: list[tuple[int, bool]] = []

    async def maybe_compact(self, messages: list[Message], *, turn: int) -> None:
        self.proactive.append(turn)

    def estimate(self, messages: list[Message]) -> int:
        return sum(m.chars for m in messages) // 4

    async def follow_window(self) -> int | None:
        return None

    async def compact(self, messages: list[Message], *, turn: int, force: bool = False) -> None:
        self.forced.append((turn, force))
        messages[1:] = [Message("user", "summary")]


async def run(
    llm: ScriptedLLM,
    *,
    budget: Budget | None = None,
    executor: Executor | None = None,
    events: Events | None = None,
    compactor: Compactor | None = None,
    cost: float = 0.0,
) -> Completion:
    return await run_loop(
        llm=llm,
        system="system",
        messages=[Message("user", "the task")],
        tools=[ECHO],
        executor=executor or Executor(),
        events=events or Events(),
        budget=budget or Budget(),
        compactor=compactor or Compactor(),  # type: ignore[arg-type]
        cost_of=lambda usage: cost,
        denied=[DENIED],
    )


# --- Budget.check: each limit triggers at exactly the limit, not one past it ---


@pytest.mark.parametrize(
    ("budget", "kind"),
    [
        (Budget(max_turns=2, turns=2), "turns"),
        (Budget(max_tokens=15, usage=Usage(10, 5)), "tokens"),
        (Budget(max_cost_usd=0.5, cost_usd=0.5), "cost"),
        (Budget(run=RunBudget(max_cost_usd=1.0, spent_usd=1.0)), "run_cost"),
    ],
)
async def test_a_limit_stops_the_task_at_exactly_the_limit(budget: Budget, kind: str) -> None:
    with pytest.raises(LimitExceeded) as caught:
        budget.check()
    assert caught.value.kind == kind


@pytest.mark.parametrize(
    "budget",
    [
        Budget(max_turns=2, turns=1),
        Budget(max_tokens=15, usage=Usage(10, 4)),
        Budget(max_cost_usd=0.5, cost_usd=0.49),
        Budget(run=RunBudget(max_cost_usd=1.0, spent_usd=0.99)),
        Budget(),
    ],
)
async def test_just_below_every_limit_another_call_is_allowed(budget: Budget) -> None:
    budget.check()


async def test_limit_messages_say_what_was_used_of_what() -> None:
    cases = [
        (Budget(max_turns=3, turns=3), "turn limit reached (3/3)"),
        (Budget(max_tokens=15, usage=Usage(10, 6)), "token limit reached (16/15)"),
        (Budget(max_cost_usd=0.5, cost_usd=0.75), "cost limit reached ($0.7500/$0.50)"),
        (
            Budget(run=RunBudget(max_cost_usd=1.0, spent_usd=1.25)),
            "run cost cap reached ($1.2500/$1.00)",
        ),
    ]
    for budget, message in cases:
        with pytest.raises(LimitExceeded) as caught:
            budget.check()
        assert str(caught.value) == message


async def test_a_fresh_budget_has_used_nothing() -> None:
    budget = Budget(run=RunBudget(max_cost_usd=0.01))
    budget.check()
    assert (budget.run.spent_usd, budget.cost_usd, budget.turns, budget.tool_calls) == (0, 0, 0, 0)
    assert RunBudget().spent_usd == 0 and RunBudget().max_cost_usd is None


async def test_cost_and_tokens_accumulate_over_calls_for_the_task_and_the_run() -> None:
    shared = RunBudget(max_cost_usd=10.0, spent_usd=1.0)
    budget = Budget(run=shared)
    llm = ScriptedLLM(echo(), echo(), done(), usage=Usage(100, 20))
    await run(llm, budget=budget, cost=0.25)
    assert budget.turns == 3
    assert budget.cost_usd == pytest.approx(0.75)
    assert shared.spent_usd == pytest.approx(1.75)
    assert (budget.usage.input_tokens, budget.usage.output_tokens) == (300, 60)
    assert budget.tool_calls == 2


async def test_the_cost_limit_stops_the_loop_once_the_calls_add_up_to_it() -> None:
    budget = Budget(max_cost_usd=0.5)
    llm = ScriptedLLM(echo(), echo(), echo(), done())
    with pytest.raises(LimitExceeded) as caught:
        await run(llm, budget=budget, cost=0.25)
    assert caught.value.kind == "cost"
    assert budget.turns == 2  # 0.25 + 0.25 reaches the limit: no third call


async def test_the_token_limit_stops_the_loop_at_or_before_the_limit() -> None:
    budget = Budget(max_tokens=30)
    llm = ScriptedLLM(echo(), echo(), done(), usage=Usage(10, 5))
    with pytest.raises(LimitExceeded) as caught:
        await run(llm, budget=budget)
    assert caught.value.kind == "tokens" and budget.usage.total <= 30


async def test_the_token_limit_counts_the_next_prompt_and_sends_no_request_past_it() -> None:
    # 15 tokens used of 100; the next prompt alone (about 100 tokens) would pass the limit.
    budget = Budget(max_tokens=100)
    llm = ScriptedLLM(echo("x" * 400), done(), usage=Usage(10, 5))
    with pytest.raises(LimitExceeded, match="next request's prompt") as caught:
        await run(llm, budget=budget)
    assert caught.value.kind == "tokens" and budget.turns == 1


# --- replies without a tool call ---


async def test_three_replies_in_a_row_without_a_call_give_up() -> None:
    events = Events()
    with pytest.raises(AgentGaveUp, match="3 replies in a row"):
        await run(ScriptedLLM("hmm", "well", "so"), events=events)
    reminders = [m for m in events.messages if m[0] == "user"]
    assert [m[1] for m in reminders] == [REMINDER, REMINDER]


async def test_the_count_of_replies_without_a_call_resets_after_a_call() -> None:
    llm = ScriptedLLM("hmm", "well", echo(), "so", "then", done("ok"))
    completion = await run(llm)
    assert completion == Completion("ok", "success")


# --- replies cut at the output limit ---


async def test_a_call_cut_at_the_output_limit_is_not_run_and_the_model_is_told() -> None:
    executor, events = Executor(), Events()
    llm = ScriptedLLM(CUT + echo("a") + "\n<echo>\n<text>b", done("ok"))
    assert await run(llm, executor=executor, events=events) == Completion("ok", "success")
    assert executor.calls == [("echo", {"text": "a"})]
    told = llm.seen[1][-1]
    assert "output token limit" in told and "cut off inside this echo call" in told
    assert "smaller steps" in told
    assert len(events.warnings) == 1 and "inside its echo call" in events.warnings[0]


async def test_replies_that_are_only_a_cut_call_count_as_replies_without_a_call() -> None:
    llm = ScriptedLLM(*[CUT + "<echo>\n<text>too long"] * 3)
    with pytest.raises(AgentGaveUp, match="3 replies in a row"):
        await run(llm)


async def test_a_cut_reply_whose_earlier_call_ran_resets_the_count() -> None:
    only_cut = CUT + "<echo>\n<text>too long"
    llm = ScriptedLLM(only_cut, only_cut, CUT + echo() + only_cut[len(CUT) :], only_cut, done())
    assert (await run(llm)).result == "finished"


async def test_a_reply_cut_before_any_call_is_told_so_instead_of_the_reminder() -> None:
    events = Events()
    llm = ScriptedLLM(CUT + "Let me think at length", "no call here", done())
    await run(llm, events=events)
    assert (
        "reached the output token limit and was cut off before it called a tool" in llm.seen[1][-1]
    )
    assert llm.seen[2][-1] == REMINDER
    assert events.warnings == ["turn 1: the reply was cut at the output limit (length)"]


async def test_a_reply_cut_after_its_last_complete_call_runs_every_call() -> None:
    executor = Executor()
    llm = ScriptedLLM(CUT + echo("a") + " and some words after it", done())
    await run(llm, executor=executor)
    assert executor.calls == [("echo", {"text": "a"})]
    assert "output token limit" not in llm.seen[1][-1]


async def test_an_unclosed_call_in_a_reply_that_was_not_cut_keeps_the_scanners_message() -> None:
    llm = ScriptedLLM("<echo>\n<text>b", done())
    await run(llm)
    assert "output token limit" not in llm.seen[1][-1]
    assert "cut off inside this echo call" in llm.seen[1][-1]


# --- the context-length error ---


async def test_a_context_length_error_forces_a_compaction_and_one_retry() -> None:
    compactor = Compactor()
    llm = ScriptedLLM(echo(), ContextLengthError("too long"), done())
    budget = Budget()
    completion = await run(llm, compactor=compactor, budget=budget)
    assert completion.result == "finished"
    assert compactor.forced == [(1, True)]
    assert llm.seen[-1] == ["the task", "summary"]  # the retry sent the compacted history
    assert compactor.proactive == [0, 1]
    assert budget.turns == 2


async def test_a_second_context_length_error_is_not_retried_again() -> None:
    llm = ScriptedLLM(ContextLengthError("too long"), ContextLengthError("still too long"))
    with pytest.raises(ContextLengthError):
        await run(llm)


# --- what the events carry ---


async def test_model_call_events_carry_cost_usage_and_reply_facts() -> None:
    events = Events()
    await run(ScriptedLLM(echo(), done(), usage=Usage(7, 3)), events=events, cost=0.125)
    assert [turn for turn, _ in events.model_calls] == [1, 2]
    fields = events.model_calls[0][1]
    assert fields == {
        "latency_s": 0.25,
        "usage": Usage(7, 3),
        "cost_usd": 0.125,
        "retries": 2,
        "stop_reason": "end_turn",
        "model": "fake-model-2025",
    }


async def test_tool_call_events_carry_server_duration_and_result() -> None:
    events = Events()
    executor = Executor(delay_s=0.05, is_error=True)
    await run(ScriptedLLM(echo("a"), done()), events=events, executor=executor)
    [(turn, fields)] = events.tool_calls
    assert turn == 1
    assert fields["tool"] == "echo" and fields["server"] == "tools"
    assert fields["arguments"] == {"text": "a"}
    assert fields["result"] == "echo said {'text': 'a'}" and fields["is_error"] is True
    # At least the tool's own wait; far below a minute (a mutant adding the clock is not).
    assert 0.05 <= fields["duration_s"] < 60


async def test_retry_events_carry_the_turn_of_the_call_being_retried() -> None:
    events = Events()
    await run(ScriptedLLM(echo(), "RETRY" + done()), events=events)
    assert events.retries == [(2, 1, "rate limited", 429, 0.5)]


async def test_messages_and_results_are_fed_back_in_order() -> None:
    events = Events()
    llm_reply = echo("one") + "\n" + echo("two")
    llm = ScriptedLLM(llm_reply, done())
    await run(llm, events=events)
    roles = [(role, turn) for role, _, turn in events.messages]
    assert roles == [("assistant", 1), ("user", 1), ("assistant", 2)]
    feedback = events.messages[1][1]
    assert feedback == (
        "[echo] Result:\necho said {'text': 'one'}\n\n[echo] Result:\necho said {'text': 'two'}"
    )
    assert llm.seen[1] == ["the task", llm_reply, feedback]


async def test_a_malformed_call_is_reported_back_and_the_loop_goes_on() -> None:
    events = Events()
    executor = Executor()
    llm = ScriptedLLM("<echo>\n<txt>a</txt>\n</echo>", done())
    await run(llm, events=events, executor=executor)
    assert executor.calls == []
    assert "echo" in events.messages[1][1] and events.messages[1][0] == "user"


async def test_attempt_completion_reports_failure_and_stops_running_calls() -> None:
    executor = Executor()
    llm = ScriptedLLM(done("could not", "failure") + "\n" + echo())
    assert await run(llm, executor=executor) == Completion("could not", "failure")
    assert executor.calls == []


async def test_a_denied_tool_is_parsed_as_a_call_and_sent_to_the_executor() -> None:
    executor = Executor()
    events = Events()
    await run(ScriptedLLM("<wipe>\n</wipe>", done()), executor=executor, events=events)
    assert executor.calls == [("wipe", {})]
    assert events.tool_calls[0][1]["server"] == "danger"


async def test_a_completion_is_a_frozen_record() -> None:
    completion = Completion("ok", "success")
    with pytest.raises(dataclasses.FrozenInstanceError):
        completion.result = "changed"  # type: ignore[misc]


async def test_tool_call_durations_are_rounded_to_a_tenth_of_a_millisecond() -> None:
    events = Events()
    reply = "\n".join(echo(str(n)) for n in range(4))
    await run(ScriptedLLM(reply, done()), events=events, executor=Executor(delay_s=0.0013))
    durations = [fields["duration_s"] for _, fields in events.tool_calls]
    assert len(durations) == 4
    # A mutant rounding to 5 places passes this only if all four readings end in 0 there.
    assert all(round(d, 4) == d for d in durations)


# --- the run cost cap's reservations, denied calls, the wind-down notice (issue 21 survivors) ---


async def test_a_reservation_holds_its_estimate_while_the_call_is_under_way() -> None:
    shared = RunBudget(max_cost_usd=1.0)
    budget = Budget(run=shared)
    assert shared.reserved_usd == 0 and budget.reserve_output_tokens == 0
    with budget.reservation(0.25):
        assert shared.reserved_usd == pytest.approx(0.25)
        with budget.reservation(0.5):  # a second task's call: both are held
            assert shared.reserved_usd == pytest.approx(0.75)
        assert shared.reserved_usd == pytest.approx(0.25)
    assert shared.reserved_usd == 0


async def test_a_call_is_refused_once_spent_and_held_reach_the_cap() -> None:
    shared = RunBudget(max_cost_usd=1.0, spent_usd=0.5)
    budget = Budget(run=shared)
    # 0.5 spent + 0.5 held is exactly the cap: no further call starts
    with (
        budget.reservation(0.5),
        pytest.raises(LimitExceeded) as caught,
        budget.reservation(0.01),
    ):
        pass
    assert caught.value.kind == "run_cost"
    assert "$0.5000 spent and $0.5000 held" in str(caught.value)
    assert shared.reserved_usd == 0


async def test_each_call_holds_the_estimate_of_its_whole_prompt_system_included() -> None:
    from runner.run.turn.compaction import Compactor as RealCompactor
    from runner.run.turn.compaction import estimate_tokens

    shared = RunBudget(max_cost_usd=1e9)
    budget = Budget(run=shared)
    budget.reserve_output_tokens = 1000
    held: list[tuple[float, float]] = []

    class Watching(ScriptedLLM):
        async def complete(self, system: str, messages: Sequence[Message], **kw: Any) -> Reply:
            wanted = estimate_tokens(system, list(messages)) + 1000  # one dollar a token
            held.append((shared.reserved_usd, wanted))
            return await super().complete(system, messages, **kw)

    llm = Watching(echo(), echo(), done())
    await run_loop(
        llm=llm,
        system="s" * 4000,
        messages=[Message("user", "the task")],
        tools=[ECHO],
        executor=Executor(),
        events=Events(),
        budget=budget,
        compactor=RealCompactor(
            llm=llm,
            system="s" * 4000,
            context_window=None,
            events=Events(),
            budget=budget,
            cost_of=lambda usage: 0.0,
        ),
        cost_of=lambda usage: float(usage.input_tokens + usage.output_tokens),
    )
    assert len(held) == 3 and all(got == wanted for got, wanted in held)
    assert held[0][1] < held[1][1] < held[2][1]  # each call's prompt is longer


async def test_calls_a_policy_refused_are_counted_as_denied() -> None:
    class Refusing(Executor):
        async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
            self.calls.append((name, arguments))
            return ToolResult("refused", is_error=True, denied=name == "wipe")

    budget = Budget()
    script = ScriptedLLM("<wipe>\n</wipe>", echo(), "<wipe>\n</wipe>", done())
    await run(script, budget=budget, executor=Refusing())
    assert (budget.tool_calls, budget.denied_calls) == (3, 2)


async def test_the_wind_down_notice_is_asked_before_every_model_call() -> None:
    asked: list[int] = []

    class Notice:
        def before_call(self, messages: list[Message], events: Any) -> None:
            asked.append(len(messages))

    await run_loop(
        llm=ScriptedLLM(echo(), done()),
        system="system",
        messages=[Message("user", "the task")],
        tools=[ECHO],
        executor=Executor(),
        events=Events(),
        budget=Budget(),
        compactor=Compactor(),  # type: ignore[arg-type]
        cost_of=lambda usage: 0.0,
        wind_down=Notice(),
    )
    assert asked == [1, 3]


async def test_every_call_after_a_malformed_one_in_a_reply_still_runs() -> None:
    executor = Executor()
    reply = "\n".join(["<echo>\n<txt>a</txt>\n</echo>", echo("one"), echo("two")])
    events = Events()
    await run(ScriptedLLM(reply, done()), executor=executor, events=events)
    assert executor.calls == [("echo", {"text": "one"}), ("echo", {"text": "two"})]
    assert events.messages[1][1].count("[echo] Result:") == 2


async def test_a_reservation_prices_the_prompt_as_input_and_the_reply_as_output() -> None:
    shared = RunBudget(max_cost_usd=1e9)
    budget = Budget(run=shared)
    budget.reserve_output_tokens = 10
    held: list[float] = []

    class Watching(ScriptedLLM):
        async def complete(self, system: str, messages: Sequence[Message], **kw: Any) -> Reply:
            held.append(shared.reserved_usd)
            return await super().complete(system, messages, **kw)

    compactor = Compactor()
    messages = [Message("user", "the task " * 40)]
    prompt_tokens = compactor.estimate(messages)
    await run_loop(
        llm=Watching(done()),
        system="system",
        messages=messages,
        tools=[ECHO],
        executor=Executor(),
        events=Events(),
        budget=budget,
        compactor=compactor,  # type: ignore[arg-type]
        # An output token costs a thousand times an input token, as with real price lists
        # the two differ: swapped prices would hold a very different amount.
        cost_of=lambda usage: usage.input_tokens * 1.0 + usage.output_tokens * 1000.0,
    )
    assert held == [prompt_tokens * 1.0 + 10 * 1000.0]


# --- issue 32 survivors: denied tools unnamed, cut replies kept short, windows learned ---


async def test_an_unknown_tool_is_answered_with_the_tools_offered_not_the_denied_ones() -> None:
    """A denied tool is parsed as a call, but naming it as available invites calls it refuses."""
    llm = ScriptedLLM("<read_file>\n<path>a</path>\n</read_file>", done())
    await run(llm)
    assert llm.seen[1][-1] == (
        "[read_file] Error:\nThere is no tool named read_file, so the call was not run."
        " Available tools: attempt_completion, echo."
    )


async def test_a_long_reply_cut_before_any_call_is_logged_whole_but_only_its_ends_stay() -> None:
    """A model that rambled to its output limit: the next requests would carry all of it."""
    events = Events()
    rambling = "".join(f"line {n}\n" for n in range(1000))
    llm = ScriptedLLM(CUT + rambling, done())
    await run(llm, events=events)
    kept = llm.seen[1][1]
    assert kept.startswith(rambling[:2000]) and kept.endswith(rambling[-2000:])
    assert "left out of the context" in kept and len(kept) < len(rambling) / 2
    assert len(llm.seen[1]) == 3 and "cut off before it called a tool" in llm.seen[1][2]
    assert events.messages[0] == ("assistant", rambling, 1)
    assert events.message_fields[0] == {"context": kept}


async def test_a_call_sent_again_after_a_context_length_error_logs_its_retries() -> None:
    events = Events()
    await run(ScriptedLLM(ContextLengthError("too long"), "RETRY" + done()), events=events)
    assert events.retries == [(1, 1, "rate limited", 429, 0.5)]


class LocalServer(ScriptedLLM):
    """A model whose window is learned from the server: an overflow teaches it 4096 tokens."""

    window: int | None = None

    async def complete(self, system: str, messages: Sequence[Message], **kw: Any) -> Reply:
        try:
            return await super().complete(system, messages, **kw)
        except ContextLengthError:
            self.window = 4096
            raise


class WindowCompactor(Compactor):
    """Follows the model's learned window; records the window each forced compaction had."""

    def __init__(self, llm: LocalServer) -> None:
        super().__init__()
        self.llm = llm
        self.window: int | None = None
        self.forced_windows: list[int | None] = []

    async def follow_window(self) -> int | None:
        if self.llm.window == self.window:
            return None
        self.window = self.llm.window
        return self.window

    async def compact(self, messages: list[Message], *, turn: int, force: bool = False) -> None:
        self.forced_windows.append(self.window)
        await super().compact(messages, turn=turn, force=force)


async def test_the_compaction_forced_by_an_overflow_fits_the_window_the_overflow_taught() -> None:
    """Compacting for the old window would leave the retry (and its summary request) too big."""
    events = Events()
    llm = LocalServer(ContextLengthError("too long"), done())
    compactor = WindowCompactor(llm)
    await run(llm, events=events, compactor=compactor)
    assert compactor.forced_windows == [4096]
    [warning] = events.warnings
    assert warning.startswith("context window: 4096 tokens from now on, learned from the server")


async def test_a_window_learned_from_the_replies_is_followed_and_logged_once() -> None:
    events = Events()
    llm = LocalServer(echo(), done())
    llm.window = 8192
    compactor = WindowCompactor(llm)
    await run(llm, events=events, compactor=compactor)
    assert compactor.window == 8192
    assert events.warnings == [
        "context window: 8192 tokens from now on, learned from the server's replies (it does not"
        " say its window; set `models: {NAME: {context_window: N}}` in the config to give it)"
    ]


async def test_a_task_cost_limit_refuses_a_call_once_spent_and_held_reach_it() -> None:
    """The task's calls under way (its sub-agents run at once) are held against its own limit."""
    budget = Budget(max_cost_usd=1.0, cost_usd=0.25)
    with budget.reservation(0.25), budget.reservation(0.25):
        assert budget.reserved_usd == 0.5  # 0.75 of 1.0: room for one more
        with (
            budget.reservation(0.25),  # 0.25 spent + 0.75 held: exactly the limit
            pytest.raises(LimitExceeded) as caught,
            budget.reservation(0.01),
        ):
            pass
    assert caught.value.kind == "cost"
    assert str(caught.value) == (
        "cost limit reached ($0.2500 spent and $0.7500 held by calls under way, of $1.00)"
    )
    assert budget.reserved_usd == 0 and budget.run.reserved_usd == 0
