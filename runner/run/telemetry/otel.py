"""The OpenTelemetry SDK behind `runner.run.telemetry.tracing`: the one module that imports it.

Spans go to the OTLP/HTTP exporter through a batch processor, which sends them from a thread of
its own: a slow or dead collector never holds up a turn. The exporter reads its configuration
(endpoint, headers, timeout, TLS files) from the standard `OTEL_EXPORTER_OTLP_*` variables.
Its failures become one warning on the console, not a log line per batch. At the end of the run
the spans still queued are sent within `FLUSH_TIMEOUT_S`; after that the run exits without them.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from runner import __version__
from runner.run.telemetry.spans import Attributes
from runner.workspace import TRACE_ENV

__all__ = ["FLUSH_TIMEOUT_S", "OtelBackend"]

FLUSH_TIMEOUT_S = 5.0
"""At the end of a run, how long the spans still queued may take to reach the collector."""

_WARNING_CHARS = 300
"""A warning quotes at most this much of the SDK's message."""


class _Span:
    """An open SDK span behind `runner.run.telemetry.spans.SpanHandle`."""

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set(self, attributes: Attributes) -> None:
        self._span.set_attributes(dict(attributes))

    def event(self, name: str, attributes: Attributes) -> None:
        self._span.add_event(name, dict(attributes))

    def fail(self, error_type: str, description: str) -> None:
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(trace.Status(trace.StatusCode.ERROR, description or None))


class OtelBackend:
    """A tracer provider exporting over OTLP/HTTP; spans nest through the current context."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.say: Callable[[str], None] = _stderr
        self._warned = threading.Event()
        _route_sdk_logging(self)
        self._provider = TracerProvider(resource=_resource(env), shutdown_on_exit=False)
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self._tracer = self._provider.get_tracer("agent-runner", __version__)
        self._propagator = TraceContextTextMapPropagator()
        self._open: dict[int, trace.Span] = {}
        self._lock = threading.Lock()
        self._shut_down = False

    @contextmanager
    def span(
        self,
        name: str,
        attributes: Attributes,
        *,
        client: bool = False,
        parent: Mapping[str, str] | None = None,
    ) -> Iterator[_Span]:
        """A span, current inside the block (commands started there get its TRACEPARENT);
        `parent`: a W3C carrier to start from instead of the current span."""
        start_from = self._propagator.extract(parent) if parent else None
        kind = trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL
        span = self._tracer.start_span(
            name, context=start_from, kind=kind, attributes=dict(attributes)
        )
        with self._lock:
            self._open[id(span)] = span
        token = otel_context.attach(trace.set_span_in_context(span, start_from))
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        env_token = TRACE_ENV.set({key.upper(): value for key, value in carrier.items()})
        try:
            yield _Span(span)
        finally:
            TRACE_ENV.reset(env_token)
            otel_context.detach(token)
            with self._lock:
                still_open = self._open.pop(id(span), None) is not None
            if still_open:  # else the watchdog's `abandon` ended it
                span.end()

    def shutdown(self) -> None:
        """Send the queued spans, waiting at most `FLUSH_TIMEOUT_S`; once (the watchdog's
        `abandon` and the end of the run may both get here)."""
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
        worker = threading.Thread(target=self._provider.shutdown, name="otel-flush", daemon=True)
        worker.start()
        worker.join(FLUSH_TIMEOUT_S)
        if worker.is_alive():
            self.warn(
                f"tracing: the collector did not take the last spans within {FLUSH_TIMEOUT_S:g} s;"
                " the run ends without them"
            )

    def abandon(self) -> None:
        """End every span still open (the process is about to exit), then flush."""
        with self._lock:
            spans = list(self._open.values())
            self._open.clear()
        for span in spans:
            span.set_attribute("agent_runner.abandoned", True)
            span.set_status(trace.Status(trace.StatusCode.ERROR, "still running at exit"))
            span.end()
        self.shutdown()

    def warn(self, message: str) -> None:
        """Say `message` once per run: an unreachable collector fails every batch alike."""
        if self._warned.is_set():
            return
        self._warned.set()
        self.say(f"warning: {message}")


class _FirstWarning(logging.Handler):
    """The SDK logs each failed export; the first such line becomes the run's one warning."""

    backend: OtelBackend | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.backend is not None:
            text = record.getMessage()
            if len(text) > _WARNING_CHARS:
                text = text[:_WARNING_CHARS] + "..."
            self.backend.warn(
                f"tracing: {text} (the run goes on; later tracing errors are not shown)"
            )


_SDK_LOG = _FirstWarning(logging.WARNING)


def _route_sdk_logging(backend: OtelBackend) -> None:
    """Send the SDK's warnings to `backend` (once per run), and nowhere else."""
    logger = logging.getLogger("opentelemetry")
    if _SDK_LOG not in logger.handlers:
        logger.addHandler(_SDK_LOG)
    logger.propagate = False
    _SDK_LOG.backend = backend


def _resource(env: Mapping[str, str]) -> Resource:
    """`service.name` agent-runner unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES`
    names the service; the SDK merges those variables in itself."""
    attributes: dict[str, Any] = {"service.version": __version__}
    named = env.get("OTEL_SERVICE_NAME") or "service.name=" in env.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    if not named:
        attributes["service.name"] = "agent-runner"
    return Resource.create(attributes)


def _stderr(line: str) -> None:
    print(f"agent-runner: {line}", file=sys.stderr, flush=True)
