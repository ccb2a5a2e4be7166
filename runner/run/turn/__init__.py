"""One turn after another (DESIGN sections 7, 12 and 16): the agent loop and what each turn needs.

`loop` checks the limits, compacts, calls the model and runs its tool calls; it knows no SDK and
no MCP server, only the Protocols it is handed (`LLM`, `ToolExecutor`, `EventSink`). `budget`
holds a task's limits and what it used, `compaction` keeps the context under the model's window,
`batch` runs the calls of one reply that may run at once (`parallel`: the read-only ones),
`replybounds` caps what one reply may make the runner do, `cutreply` handles a reply cut at the
output limit, `native` is the tool mode a task runs in and the loop's side of native tool calls,
and `winddown` warns near a limit and asks for a last report at it.
"""

from __future__ import annotations

from runner.run.turn.batch import Concurrency, Lane
from runner.run.turn.budget import Budget, LimitExceeded, RunBudget
from runner.run.turn.compaction import Compactor
from runner.run.turn.loop import AgentGaveUp, Completion, EventSink, ToolExecutor, run_loop
from runner.run.turn.native import (
    ANSWERED,
    NativeModel,
    answer_open_calls,
    logged_tool_mode,
    native_fields,
    native_model,
    native_tools_for,
    task_in_mode,
    with_tool_mode,
)
from runner.run.turn.parallel import read_lane
from runner.run.turn.replybounds import ReplyBounds
from runner.run.turn.winddown import WindDown

__all__ = [
    "ANSWERED",
    "AgentGaveUp",
    "Budget",
    "Compactor",
    "Completion",
    "Concurrency",
    "EventSink",
    "Lane",
    "LimitExceeded",
    "NativeModel",
    "ReplyBounds",
    "RunBudget",
    "ToolExecutor",
    "WindDown",
    "answer_open_calls",
    "logged_tool_mode",
    "native_fields",
    "native_model",
    "native_tools_for",
    "read_lane",
    "run_loop",
    "task_in_mode",
    "with_tool_mode",
]
