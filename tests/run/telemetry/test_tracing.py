"""The tracing wrappers (runner.run.telemetry.tracing) against a recording backend: what each span
says, what is masked, and that nothing changes when no run is traced.

The exporter itself (OpenTelemetry's SDK over OTLP/HTTP) is covered end to end in
tests/e2e/test_tracing.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from runner.errors import ProviderError
from runner.llm import Message, Reply, RetryEvent, Usage
from runner.outcome import TaskOutcome, Totals
from runner.redact import Redactor
from runner.run.telemetry.spans import Attributes
from runner.run.telemetry.tracing import (
    annotate_run,
    traced_agent,
    traced_llm,
    traced_task,
    traced_tools,
    tracing_to,
    tracing_wanted,
)
from runner.task import load_tasks
from runner.toolcall import ToolResult, ToolSpec

SECRET = "hunter2-secret-value"
TASK_SECRET = "task-only-secret-77"


@dataclass
class Recorded:
    name: str
    attributes: dict[str, Any]
    parent: Recorded | None
    client: bool
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failure: tuple[str, str] | None = None
    ended: bool = False

    def set(self, attributes: Attributes) -> None:
        self.attributes.update(attributes)

    def event(self, name: str, attributes: Attributes) -> None:
        self.events.append((name, dict(attributes)))

    def fail(self, error_type: str, description: str) -> None:
        self.failure = (error_type, description)


class RecordingBackend:
    """Keeps every span, nested by the order they open and close."""

    def __init__(self) -> None:
        self.spans: list[Recorded] = []
        self.stack: list[Recorded] = []
        self.say: Callable[[str], None] = print
        self.shut_down = False

    @contextmanager
    def span(
        self,
        name: str,
        attributes: Attributes,
        *,
        client: bool = False,
        parent: Mapping[str, str] | None = None,
    ) -> Iterator[Recorded]:
        span = Recorded(name, dict(attributes), self.stack[-1] if self.stack else None, client)
        self.spans.append(span)
        self.stack.append(span)
        try:
            yield span
        finally:
            self.stack.remove(span)
            span.ended = True

    def shutdown(self) -> None:
        self.shut_down = True

    def abandon(self) -> None:
        pass

    def named(self, name: str) -> Recorded:
        (span,) = [s for s in self.spans if s.name == name]
        return span

    def everything(self) -> str:
        return repr([(s.name, s.attributes, s.events, s.failure) for s in self.spans])


class FakeLLM:
    provider = "openai"
    model = "gpt-test"
    info = None
    shareable = True

    def __init__(self, *, retries: int = 0, error: Exception | None = None) -> None:
        self.retries = retries
        self.error = error
        self.closed = False

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> Reply:
        for attempt in range(1, self.retries + 1):
            assert on_retry is not None
            on_retry(RetryEvent(attempt, f"HTTP 429 for key {SECRET}", 429, 0.5))
        if self.error is not None:
            raise self.error
        return Reply("hi", Usage(10, 5, 100, 7), "stop", 0.1, self.retries, "gpt-test-2025")

    async def aclose(self) -> None:
        self.closed = True


class Tools:
    def __init__(self, result: ToolResult) -> None:
        self.result = result

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self.result


def run(coroutine: Any) -> Any:
    async def main() -> Any:
        return await coroutine

    return anyio.run(main)


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "TRUE"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "otlp"}, True),
    ],
)
def test_an_endpoint_turns_tracing_on_unless_the_sdk_is_disabled(
    env: dict[str, str], wanted: bool
) -> None:
    assert tracing_wanted(env) is wanted


def test_without_a_traced_run_the_wrappers_hand_back_what_they_got() -> None:
    llm, tools = FakeLLM(), Tools(ToolResult("ok"))
    assert traced_llm(llm) is llm
    assert traced_tools(tools, []) is tools
    result = ToolResult("child result")

    async def child() -> ToolResult:
        return result

    assert run(traced_agent("helper", child())) is result


def test_a_traced_model_is_the_same_model_with_a_chat_span_per_call() -> None:
    backend = RecordingBackend()
    inner = FakeLLM(retries=1)
    with tracing_to(backend, 1):
        llm = traced_llm(inner)
        assert traced_llm(llm) is llm
        assert (llm.provider, llm.model, llm.info) == ("openai", "gpt-test", None)
        assert getattr(llm, "shareable", False) is True
        llm.info = "changed"
        assert inner.info == "changed"
        reply = run(llm.complete("system", [Message("user", "hi")]))
        run(llm.aclose())  # type: ignore[attr-defined]
    assert inner.closed
    assert backend.shut_down
    assert reply.text == "hi"
    chat = backend.named("chat gpt-test")
    assert chat.client
    assert chat.parent is backend.named("agent-runner run")
    assert chat.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.response.model": "gpt-test-2025",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 117,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 100,
        "gen_ai.usage.cache_creation.input_tokens": 7,
        "agent_runner.retries": 1,
    }
    assert chat.failure is None


def test_a_failed_model_call_records_its_retries_and_its_masked_error() -> None:
    backend = RecordingBackend()
    seen: list[RetryEvent] = []
    llm = FakeLLM(retries=2, error=ProviderError(f"gave up; key {SECRET} refused"))
    with tracing_to(backend, 1):
        annotate_run("run-1", Redactor([SECRET]), print)
        with pytest.raises(ProviderError):
            run(traced_llm(llm).complete("s", [Message("user", "x")], on_retry=seen.append))
    assert [event.attempt for event in seen] == [1, 2]
    chat = backend.named("chat gpt-test")
    assert chat.attributes["agent_runner.retries"] == 2
    assert [name for name, _ in chat.events] == ["retry", "retry"]
    assert chat.events[0][1]["http.response.status_code"] == 429
    assert chat.failure is not None
    assert chat.failure[0] == "ProviderError"
    assert "***" in chat.failure[1]
    assert SECRET not in backend.everything()
    assert backend.named("agent-runner run").attributes["agent_runner.run_id"] == "run-1"


def test_a_tool_span_says_which_server_and_whether_it_failed_but_not_what_it_returned() -> None:
    backend = RecordingBackend()
    specs = [ToolSpec("read_file", "", server="workspace")]
    with tracing_to(backend, 1):
        failing = traced_tools(Tools(ToolResult(f"Error: {SECRET}", is_error=True)), specs)
        run(failing.call("read_file", {"path": SECRET}))
        denied = traced_tools(Tools(ToolResult("no", is_error=True, denied=True)), specs)
        run(denied.call("execute_command", {}))
    first, second = (s for s in backend.spans if s.name.startswith("execute_tool"))
    assert first.name == "execute_tool read_file"
    assert first.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "read_file",
        "agent_runner.tool.server": "workspace",
        "agent_runner.tool.is_error": True,
    }
    assert first.failure == ("tool_error", "")
    assert second.attributes["agent_runner.tool.server"] == ""
    assert second.attributes["agent_runner.tool.denied"] is True
    assert SECRET not in backend.everything()


def test_a_task_span_is_masked_with_the_tasks_own_secrets(tmp_path: Path) -> None:
    file = tmp_path / "t.yaml"
    file.write_text(f"name: deploy-{TASK_SECRET}\nprompt: hi\nsecrets: [PROBE]\n", encoding="utf-8")
    (task,) = load_tasks([file], env={"PROBE": TASK_SECRET})
    backend = RecordingBackend()
    outcome = TaskOutcome(
        name=task.name,
        task_file=file,
        status="failed",
        reason=f"check failed for {TASK_SECRET}",
        kind="check",
        totals=Totals(turns=3, input_tokens=10, output_tokens=4, cache_read_tokens=6),
        session_id="s-1",
    )

    async def work() -> TaskOutcome:
        llm = traced_llm(FakeLLM())
        await llm.complete("s", [Message("user", TASK_SECRET)])
        return outcome

    with tracing_to(backend, 1):
        assert run(traced_task(task, FakeLLM(), Redactor(), work())) is outcome
    span = backend.named("invoke_agent deploy-***")
    assert span.parent is backend.named("agent-runner run")
    assert backend.named("chat gpt-test").parent is span
    assert span.attributes["gen_ai.agent.name"] == "deploy-***"
    assert span.attributes["agent_runner.task.status"] == "failed"
    assert span.attributes["gen_ai.usage.input_tokens"] == 16
    assert span.attributes["gen_ai.conversation.id"] == "s-1"
    assert span.failure == ("check", "check failed for ***")
    assert TASK_SECRET not in backend.everything()


def test_a_sub_agent_span_names_its_session_and_its_failure() -> None:
    backend = RecordingBackend()

    async def child() -> ToolResult:
        return ToolResult("stopped", is_error=True, log_fields={"child_session_id": "c-1"})

    with tracing_to(backend, 1):
        run(traced_agent("helper", child()))
    span = backend.named("invoke_agent helper")
    assert span.attributes["gen_ai.agent.name"] == "helper"
    assert span.attributes["gen_ai.conversation.id"] == "c-1"
    assert span.failure == ("sub_agent_error", "")
