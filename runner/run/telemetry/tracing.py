"""OpenTelemetry traces of a run (DESIGN section 17), or nothing at all.

With the `otel` extra installed and `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-only
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, a run exports one trace: a span for the run, one per
task (`invoke_agent`), per model call (`chat`) and per tool call (`execute_tool`), and a sub-agent's
session (`invoke_agent`) under the `sub_agent` call that started it. Every command and hook then
runs with the `TRACEPARENT` of the span it belongs to (`runner.workspace.TRACE_ENV`).

Otherwise each wrapper here hands its argument back as it came and nothing of OpenTelemetry is
imported: the SDK lives in `runner.run.telemetry.otel`, loaded only when a run is traced, behind
the seam of `runner.run.telemetry.spans`. Every string sent goes through the task's redactor;
prompts, replies, tool arguments and results are never sent.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from runner.llm import LLM, Message, Reply, RetryEvent, Usage
from runner.outcome import TaskOutcome
from runner.redact import Redactor
from runner.run.telemetry.spans import Attributes, Backend, SpanHandle
from runner.run.turn import ToolExecutor
from runner.task import Task
from runner.toolcall import ToolResult, ToolSpec

__all__ = [
    "ENDPOINT_VARIABLES",
    "RunTrace",
    "abandon_traces",
    "annotate_run",
    "traced_agent",
    "traced_llm",
    "traced_run",
    "traced_task",
    "traced_tools",
    "tracing_to",
    "tracing_wanted",
]

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""Either one turns tracing on (the SDK reads the rest of its `OTEL_*` configuration itself)."""


@dataclass
class _Traced:
    """The traced run in progress, if any."""

    backend: Backend | None = None
    """The run's exporter while a traced run is on; None otherwise (every wrapper is a no-op)."""
    span: SpanHandle | None = None
    """The run's span."""
    redactor: Redactor = field(default_factory=Redactor)
    """Masks what a span outside any task says (the run's secrets)."""


_RUN = _Traced()
_REDACTOR: ContextVar[Redactor | None] = ContextVar("_REDACTOR", default=None)
"""Masks what a span inside a task says: the task's redactor (its own secrets too)."""


def tracing_wanted(env: Mapping[str, str]) -> bool:
    """An OTLP endpoint is set and neither `OTEL_SDK_DISABLED` nor `OTEL_TRACES_EXPORTER=none`
    turns traces off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


class RunTrace:
    """The run's span, or nothing when the run is not traced."""

    def __init__(self, span: SpanHandle | None) -> None:
        self._span = span

    def finish(self, code: int) -> int:
        """Record the run's exit code on its span; return it."""
        if self._span is not None:
            self._span.set({"agent_runner.exit_code": int(code)})
            if code != 0:
                self._span.fail("exit_code", f"exit code {int(code)}")
        return code


@contextmanager
def traced_run(env: Mapping[str, str], tasks: int) -> Iterator[RunTrace]:
    """Trace the run inside the block when `env` asks for it; flush (bounded) at its end."""
    backend = _load_backend(env) if tracing_wanted(env) else None
    if backend is None:
        yield RunTrace(None)
        return
    # A TRACEPARENT in the runner's own environment (a traced CI job) becomes the run's parent.
    incoming = {key.lower(): env[key] for key in ("TRACEPARENT", "TRACESTATE") if key in env}
    with tracing_to(backend, tasks, incoming) as run:
        yield run


@contextmanager
def tracing_to(
    backend: Backend, tasks: int, parent: Mapping[str, str] | None = None
) -> Iterator[RunTrace]:
    """Send the spans of the block to `backend`, under a run span; shut it down at the end."""
    _RUN.backend = backend
    try:
        attributes = {"agent_runner.tasks": tasks}
        with backend.span("agent-runner run", attributes, parent=parent) as span:
            _RUN.span = span
            yield RunTrace(span)
    finally:
        _RUN.backend, _RUN.span, _RUN.redactor = None, None, Redactor()
        backend.shutdown()


def annotate_run(run_id: str, redactor: Redactor, say: Callable[[str], None]) -> None:
    """Once the run has its id and redactor: the run span's id, and where warnings go."""
    backend, span = _RUN.backend, _RUN.span
    if backend is None or span is None:
        return
    _RUN.redactor = redactor
    backend.say = lambda line: say(redactor.text(line))
    span.set({"agent_runner.run_id": redactor.text(run_id)})


def abandon_traces() -> None:
    """The watchdog ends the process: end the spans still open, send what can be sent."""
    backend = _RUN.backend
    if backend is not None:
        backend.abandon()


async def traced_task(
    task: Task, llm: LLM, redactor: Redactor, work: Awaitable[TaskOutcome]
) -> TaskOutcome:
    """Await `work` (the task's run) inside its `invoke_agent` span."""
    backend = _RUN.backend
    if backend is None:
        return await work
    token = _REDACTOR.set(redactor.with_secrets(task.secrets))
    try:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": task.name,
            "gen_ai.provider.name": llm.provider,
            "gen_ai.request.model": llm.model,
            "agent_runner.task.file": str(task.file),
        }
        with _span(backend, f"invoke_agent {task.name}", attributes) as span:
            outcome = await work
            span.set(_masked(_outcome_attributes(outcome)))
            if outcome.status != "passed":
                span.fail(outcome.kind or outcome.status, _mask(outcome.reason))
            return outcome
    finally:
        _REDACTOR.reset(token)


async def traced_agent(name: str, work: Awaitable[ToolResult]) -> ToolResult:
    """Await `work` (a sub-agent's session) inside its `invoke_agent` span."""
    backend = _RUN.backend
    if backend is None:
        return await work
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    with _span(backend, f"invoke_agent {name}", attributes) as span:
        result = await work
        session = result.log_fields.get("child_session_id")
        span.set(_masked({"gen_ai.conversation.id": str(session or "")}))
        if result.is_error:
            span.fail("sub_agent_error", "")
        return result


def traced_llm(llm: LLM) -> LLM:
    """`llm`, with a `chat` span per call while a run is traced."""
    if _RUN.backend is None or isinstance(llm, _TracedLLM):
        return llm
    return _TracedLLM(llm)


def traced_tools(executor: ToolExecutor, specs: Iterable[ToolSpec]) -> ToolExecutor:
    """`executor`, with an `execute_tool` span per call while a run is traced."""
    if _RUN.backend is None:
        return executor
    return _TracedTools(executor, {spec.name: spec.server for spec in specs})


class _TracedLLM:
    """An LLM whose calls are spans; everything else (attributes read or set, other methods) is
    the wrapped model's, so a member added to the `LLM` protocol later needs nothing here."""

    def __init__(self, inner: LLM) -> None:
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        **options: Any,
    ) -> Reply:
        inner: LLM = self._inner
        backend = _RUN.backend
        if backend is None:
            return await inner.complete(system, messages, on_retry=on_retry, **options)
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": inner.provider,
            "gen_ai.request.model": inner.model,
        }
        retries = 0
        with _span(backend, f"chat {inner.model}", attributes, client=True) as span:

            def retried(event: RetryEvent) -> None:
                nonlocal retries
                retries += 1
                span.event("retry", _retry_attributes(event))
                if on_retry is not None:
                    on_retry(event)

            try:
                reply = await inner.complete(system, messages, on_retry=retried, **options)
            finally:
                span.set({"agent_runner.retries": retries})
            span.set(_masked(_reply_attributes(reply)))
            return reply


class _TracedTools:
    """A tool executor whose calls are spans."""

    def __init__(self, inner: ToolExecutor, servers: Mapping[str, str]) -> None:
        self._inner = inner
        self._servers = dict(servers)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        backend = _RUN.backend
        if backend is None:
            return await self._inner.call(name, arguments)
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "agent_runner.tool.server": self._servers.get(name, ""),
        }
        with _span(backend, f"execute_tool {name}", attributes) as span:
            result = await self._inner.call(name, arguments)
            span.set({"agent_runner.tool.is_error": result.is_error})
            if result.denied:
                span.set({"agent_runner.tool.denied": True})
            if result.is_error:
                # The result's text is never sent: it may hold what the runner cannot mask.
                span.fail("tool_error", "")
            return result


@contextmanager
def _span(
    backend: Backend, name: str, attributes: Attributes, *, client: bool = False
) -> Iterator[SpanHandle]:
    """A span named and described through the current redactor; an exception marks it failed
    with its type and (masked) message."""
    with backend.span(_mask(name), _masked(attributes), client=client) as span:
        try:
            yield span
        except BaseException as error:
            span.fail(type(error).__name__, _mask(str(error))[:500])
            raise


def _mask(text: str) -> str:
    return (_REDACTOR.get() or _RUN.redactor).text(text)


def _masked(attributes: Attributes) -> dict[str, Any]:
    masked: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            masked[key] = _mask(value)
        elif isinstance(value, (bool, int, float)):
            masked[key] = value
        else:
            masked[key] = [_mask(str(item)) for item in value]
    return masked


def _input_tokens(usage: Usage) -> int:
    """All prompt tokens, cached ones included, as the GenAI conventions count them."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def _reply_attributes(reply: Reply) -> dict[str, Any]:
    usage = reply.usage
    attributes: dict[str, Any] = {
        "gen_ai.response.model": reply.model,
        "gen_ai.response.finish_reasons": [reply.stop_reason],
        "gen_ai.usage.input_tokens": _input_tokens(usage),
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        "agent_runner.retries": reply.retries,
    }
    if usage.estimated:
        attributes["agent_runner.usage.estimated"] = True
    return attributes


def _retry_attributes(event: RetryEvent) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "agent_runner.retry.attempt": event.attempt,
        "agent_runner.retry.reason": _mask(event.reason),
        "agent_runner.retry.wait_s": event.wait_s,
    }
    if event.status is not None:
        attributes["http.response.status_code"] = event.status
    return attributes


def _outcome_attributes(outcome: TaskOutcome) -> dict[str, Any]:
    totals = outcome.totals
    return {
        "agent_runner.task.status": outcome.status,
        "agent_runner.task.kind": outcome.kind,
        "agent_runner.exit_code": int(outcome.exit_code),
        "gen_ai.conversation.id": outcome.session_id,
        "gen_ai.usage.input_tokens": totals.input_tokens
        + totals.cache_read_tokens
        + totals.cache_write_tokens,
        "gen_ai.usage.output_tokens": totals.output_tokens,
        "agent_runner.turns": totals.turns,
        "agent_runner.tool_calls": totals.tool_calls,
        "agent_runner.cost_usd": totals.cost_usd,
    }


def _load_backend(env: Mapping[str, str]) -> Backend | None:
    """The SDK's exporter, or None (with a warning) when the `otel` extra is not installed."""
    try:
        from runner.run.telemetry.otel import OtelBackend
    except ImportError as error:
        print(
            "agent-runner: warning: an OTLP endpoint is set but OpenTelemetry is not installed "
            f"({error.name or error}): no traces are sent; install the runner with its `otel` "
            "extra to send them",
            file=sys.stderr,
            flush=True,
        )
        return None
    return OtelBackend(env)
