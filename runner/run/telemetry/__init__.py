"""What a run tells the world while it runs (DESIGN section 17), and how it stops on a signal.

`tracing` wraps the run, its tasks, model calls, tool calls and sub-agents in OpenTelemetry spans
when a run is traced (a no-op otherwise), through the seam of `spans`; `otel` is the one module
that imports the SDK, loaded only then (this face never imports it). `progress` prints the
heartbeat, TURN and RETRY lines on the console; `console` the task lines, final table and
result text. `watchdog` receives SIGINT and SIGTERM on a
thread of its own and writes the reports itself when the event loop is stuck.
"""

from __future__ import annotations

from runner.run.telemetry.console import Console, append_step_summary, print_result, report_finished
from runner.run.telemetry.progress import Progress
from runner.run.telemetry.tracing import (
    abandon_traces,
    annotate_run,
    traced_agent,
    traced_llm,
    traced_run,
    traced_task,
    traced_tools,
)
from runner.run.telemetry.watchdog import Watchdog

__all__ = [
    "Console",
    "Progress",
    "Watchdog",
    "abandon_traces",
    "annotate_run",
    "append_step_summary",
    "print_result",
    "report_finished",
    "traced_agent",
    "traced_llm",
    "traced_run",
    "traced_task",
    "traced_tools",
]
