"""An OTLP/HTTP trace receiver for tests: `POST /v1/traces` with a protobuf
`ExportTraceServiceRequest`, decoded with `opentelemetry-proto` (the exporter's own dependency).

It listens on 127.0.0.1 on a free port, keeps every span it received (with its resource's
attributes) and the raw request bodies, and answers 200 with an empty response. `status` makes it
answer every request with that HTTP status instead (a collector that refuses).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["OtlpReceiver", "ReceivedSpan"]


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the collector saw it; ids as lowercase hex, as in a TRACEPARENT."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    events: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, which) if which else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


class OtlpReceiver:
    """`with OtlpReceiver() as receiver:`; `receiver.endpoint` is the base URL to export to."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.spans: list[ReceivedSpan] = []
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                receiver._received(self.path, body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(receiver.status)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _received(self, path: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            attributes=_attributes(span.attributes),
                            status_code=span.status.code,
                            status_message=span.status.message,
                            events=[(e.name, _attributes(e.attributes)) for e in span.events],
                            resource=resource,
                        )
                    )
        with self._lock:
            self.paths.append(path)
            self.bodies.append(body)
            self.spans.extend(spans)

    def named(self, name: str) -> list[ReceivedSpan]:
        """The spans called `name`, in the order they arrived."""
        with self._lock:
            return [span for span in self.spans if span.name == name]

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
