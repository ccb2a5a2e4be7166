"""The seam between the tracing wrappers and the OpenTelemetry SDK: what a span and an exporter
must offer. `runner.run.telemetry.tracing` writes against it, `runner.run.telemetry.otel` fills it
in; neither imports the other's names back (the SDK is loaded only when a run is traced).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

__all__ = ["Attributes", "Backend", "SpanHandle"]

Attributes = Mapping[str, str | bool | int | float | Sequence[str]]


class SpanHandle(Protocol):
    """One open span, as the wrappers here use it."""

    def set(self, attributes: Attributes) -> None: ...

    def event(self, name: str, attributes: Attributes) -> None: ...

    def fail(self, error_type: str, description: str) -> None: ...


class Backend(Protocol):
    """The exporter behind the wrappers (`runner.run.telemetry.otel.OtelBackend`)."""

    say: Callable[[str], None]
    """Where warnings go (the run's console once `annotate_run` set it)."""

    def span(
        self,
        name: str,
        attributes: Attributes,
        *,
        client: bool = False,
        parent: Mapping[str, str] | None = None,
    ) -> AbstractContextManager[SpanHandle]: ...

    def shutdown(self) -> None: ...

    def abandon(self) -> None: ...
