"""The loop in tool_mode native (DESIGN section 16): calls come from the reply's native calls, the
request carries the tools, every call gets a result under its id, and the log hears the ids. The
model is a scripted LLM, the tools a recording executor, as in test_loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from runner.errors import ContextLengthError
from runner.llm import Message, NativeCall, NativeResult, NativeTools, Reply, RetryEvent, Usage
from runner.run.turn.budget import Budget
from runner.run.turn.loop import AgentGaveUp, Completion, run_loop
from runner.run.turn.native import NOT_RUN
from runner.run.turn.replybounds import ReplyBounds
from runner.settings import ModelInfo
from runner.toolcall import ATTEMPT_COMPLETION, NATIVE_REMINDER
from tests.run.turn.test_loop import DENIED, ECHO, Compactor, Executor

pytestmark = pytest.mark.anyio

TOOLS = NativeTools((ECHO, ATTEMPT_COMPLETION))


def calls(*items: tuple[str, str, str]) -> tuple[NativeCall, ...]:
    return tuple(NativeCall(*item) for item in items)


def finish(result: str = "finished", status: str = "success") -> tuple[NativeCall, ...]:
    return calls(("z", "attempt_completion", f'{{"result": "{result}", "status": "{status}"}}'))


class NativeLLM:
    """Replies with native calls from a script; records what each request offered."""

    provider = "fake"
    model = "fake-model"
    info: ModelInfo | None = None

    def __init__(self, *script: tuple[NativeCall, ...] | Reply | Exception) -> None:
        self.script = list(script)
        self.seen: list[tuple[list[Message], Any]] = []

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        tools: NativeTools | None = None,
    ) -> Reply:
        self.seen.append((list(messages), tools))
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, Reply):
            return step
        return Reply("text", Usage(10, 5), "tool_use", 0.1, 0, "fake", step)


class Events:
    def __init__(self) -> None:
        self.messages: list[tuple[str, str, dict[str, Any]]] = []
        self.tool_calls: list[dict[str, Any]] = []

    def message(self, role: str, content: str, turn: int, **native: Any) -> None:
        self.messages.append((role, content, native))

    def model_call(self, turn: int, **fields: Any) -> None:
        pass

    def tool_call(self, turn: int, **fields: Any) -> None:
        self.tool_calls.append(fields)

    def retry(self, *args: Any) -> None:
        pass

    def compaction(self, turn: int, **fields: Any) -> None:
        pass


async def run(
    llm: NativeLLM,
    executor: Executor | None = None,
    events: Events | None = None,
    max_calls: int = 50,
    compactor: Compactor | None = None,
) -> tuple[Completion, list[Message]]:
    messages = [Message("user", "the task")]
    completion = await run_loop(
        llm=llm,  # type: ignore[arg-type]
        system="system",
        messages=messages,
        tools=[ECHO],
        executor=executor or Executor(),
        events=events or Events(),  # type: ignore[arg-type]
        budget=Budget(),
        compactor=compactor or Compactor(),  # type: ignore[arg-type]
        cost_of=lambda usage: 0.0,
        denied=[DENIED],
        bounds=ReplyBounds(max_calls=max_calls),
        native=TOOLS,
    )
    return completion, messages


async def test_native_calls_run_and_their_results_go_back_by_id() -> None:
    llm = NativeLLM(calls(("a", "echo", '{"text": "hi"}'), ("b", "echo", '{"text": 2}')), finish())
    executor, events = Executor(), Events()
    completion, messages = await run(llm, executor, events)
    assert completion == Completion("finished", "success")
    assert executor.calls == [("echo", {"text": "hi"}), ("echo", {"text": "2"})]
    assert llm.seen[0][1] is TOOLS and llm.seen[1][1] is TOOLS
    assert messages[1] == Message("assistant", "text", llm.seen[1][0][1].calls)
    assert messages[2] == Message(
        "user",
        "",
        results=(
            NativeResult("a", "echo", "[echo] Result:\necho said {'text': 'hi'}", False),
            NativeResult("b", "echo", "[echo] Result:\necho said {'text': '2'}", False),
        ),
    )
    assert [c["call_id"] for c in events.tool_calls] == ["a", "b"]
    assert events.messages[0][2]["tool_calls"][0] == {
        "id": "a",
        "name": "echo",
        "arguments": '{"text": "hi"}',
    }
    assert [r["id"] for r in events.messages[1][2]["tool_results"]] == ["a", "b"]


async def test_an_error_result_is_marked_as_an_error() -> None:
    llm = NativeLLM(calls(("a", "echo", '{"text": "hi"}')), finish())
    _, messages = await run(llm, Executor(is_error=True))
    (result,) = messages[2].results
    assert result.is_error and result.content.startswith("[echo] Error:")


async def test_malformed_arguments_run_nothing_and_answer_the_call_with_an_error() -> None:
    llm = NativeLLM(calls(("a", "echo", '{"text": ')), finish())
    executor, events = Executor(), Events()
    await run(llm, executor, events)
    assert executor.calls == [] and events.tool_calls == []
    (messages, _) = llm.seen[1]
    (result,) = messages[-1].results
    assert result.id == "a" and result.is_error
    assert "The echo call was not run" in result.content and "not valid JSON" in result.content


async def test_a_denied_tool_called_natively_goes_to_the_executor() -> None:
    llm = NativeLLM(calls(("a", "wipe", "{}")), finish())
    executor, events = Executor(), Events()
    await run(llm, executor, events)
    assert executor.calls == [("wipe", {})]
    assert events.tool_calls[0]["server"] == "danger"


async def test_a_reply_without_calls_gets_the_native_reminder_and_three_give_up() -> None:
    llm = NativeLLM((), (), finish())
    _, messages = await run(llm)
    assert messages[2] == Message("user", NATIVE_REMINDER)
    assert "XML" not in NATIVE_REMINDER
    with pytest.raises(AgentGaveUp):
        await run(NativeLLM((), (), ()))


async def test_a_failure_completion_ends_the_loop_before_later_calls() -> None:
    llm = NativeLLM((*finish("stuck", "failure"), *calls(("b", "echo", '{"text": "x"}'))))
    executor = Executor()
    completion, _ = await run(llm, executor)
    assert completion == Completion("stuck", "failure") and executor.calls == []


async def test_calls_past_the_limit_are_answered_as_not_run_with_the_limit_note() -> None:
    llm = NativeLLM(calls(("a", "echo", '{"text": "1"}'), ("b", "echo", '{"text": "2"}')), finish())
    executor = Executor()
    _, messages = await run(llm, executor, max_calls=1)
    assert executor.calls == [("echo", {"text": "1"})]
    first, second = messages[2].results
    assert (first.id, first.is_error) == ("a", False)
    assert (second.id, second.content, second.is_error) == ("b", NOT_RUN, True)
    assert "only the first 1 ran" in messages[2].content


async def test_the_context_length_retry_offers_the_tools_again() -> None:
    llm = NativeLLM(ContextLengthError("too long"), finish())
    compactor = Compactor()
    await run(llm, compactor=compactor)
    assert compactor.forced == [(0, True)]
    assert [tools for _, tools in llm.seen] == [TOOLS, TOOLS]


def test_xml_mode_passes_no_tools_keyword() -> None:
    # ScriptedLLM of test_loop takes no `tools`: every xml test there would fail if it were sent.
    from tests.run.turn.test_loop import ScriptedLLM

    assert "tools" not in ScriptedLLM.complete.__code__.co_varnames


async def test_a_long_reply_cut_inside_its_only_call_logs_that_call_with_the_whole_text() -> None:
    """Only the reply's ends stay in the context, but its call stays whole in both: the log
    must hold the call that the next message answers by its id."""
    cut = calls(("a", "echo", '{"text": "unfini'))
    rambling = "".join(f"line {n}\n" for n in range(1000))
    llm = NativeLLM(Reply(rambling, Usage(10, 5), "length", 0.1, 0, "fake", cut), finish())
    events = Events()
    _, messages = await run(llm, events=events)
    assert messages[1].calls == cut and len(messages[1].content) < len(rambling) / 2
    assert events.messages[0] == (
        "assistant",
        rambling,
        {
            "context": messages[1].content,
            "tool_calls": [{"id": "a", "name": "echo", "arguments": '{"text": "unfini'}],
        },
    )
    (result,) = messages[2].results
    assert result.id == "a" and "output token limit" in result.content
