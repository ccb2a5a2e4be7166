"""Sub-agents (DESIGN section 13): the `sub_agent` tool, the executor that runs its calls, and
the calls a cut-off parent left behind.

`tool` describes `sub_agent` and decides which calls of a reply run at once; `executor` makes a
session's tool executor when its task has agents (`AgentTools`), which starts each child through
the `ChildRunner` it is handed (the session room's `run_child`): a child session is a session, and
the recursion never imports back up. `settled` gives a resumed parent the results of the children
its last reply started.
"""

from __future__ import annotations

from runner.run.agents.executor import (
    AgentTools,
    ChildRunner,
    RunContext,
    SessionFrame,
    ToolHub,
    agent_executor,
    close_agent_models,
)
from runner.run.agents.settled import settled_agent_calls
from runner.run.agents.tool import SUB_AGENT, agent_tool, call_concurrency, offered_tools

__all__ = [
    "SUB_AGENT",
    "AgentTools",
    "ChildRunner",
    "RunContext",
    "SessionFrame",
    "ToolHub",
    "agent_executor",
    "agent_tool",
    "call_concurrency",
    "close_agent_models",
    "offered_tools",
    "settled_agent_calls",
]
