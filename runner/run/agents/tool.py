"""The `sub_agent` tool (DESIGN section 13): how it is described, when it is offered, and which
calls of a reply run at once (sub_agent calls, and read-only calls: DESIGN 16).

Pure functions of the task and its tools: the executor that runs the calls is
`runner.run.agents.executor`, the session that a call starts is `runner.run.session.child`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from runner.run.turn import Concurrency, Lane, read_lane
from runner.task import AgentSpec, Task
from runner.toolcall import ToolSpec

__all__ = ["SUB_AGENT", "agent_concurrency", "agent_tool", "call_concurrency", "offered_tools"]

SUB_AGENT = "sub_agent"
"""The one tool through which a parent starts its sub-agents."""


def agent_tool(agents: Mapping[str, AgentSpec], parallel: int) -> ToolSpec:
    """The `sub_agent` tool: `agent` is an enum of the agents' names, each described."""
    listed = "\n".join(
        f"- {name}: {' '.join(agent.description.split())}" for name, agent in agents.items()
    )
    description = (
        "Start a sub-agent: a separate session with a fresh context and its own tools. It sees "
        "nothing of this conversation, only `task`, and its final result comes back as this "
        f"call's result. Several sub_agent calls in one message run at the same time (at most "
        f"{parallel} at once) and their results come back in call order; give each one a "
        f"self-contained task. The agents:\n{listed}"
    )
    return ToolSpec(
        name=SUB_AGENT,
        description=description,
        input_schema={
            "type": "object",
            "properties": {
                "agent": {
                    "type": "string",
                    "enum": list(agents),
                    "description": "Which agent to start.",
                },
                "task": {
                    "type": "string",
                    "description": "Everything the sub-agent needs to know to do its work, and "
                    "what to report back.",
                },
            },
            "required": ["agent", "task"],
        },
    )


def offered_tools(task: Task, tools: Sequence[ToolSpec], depth: int = 0) -> list[ToolSpec]:
    """`tools` plus `sub_agent` when the task has agents and `depth` allows one more level,
    less the tools a bare deny rule (`execute_command`, `--deny-tool execute_command`: every
    call refused) names: such a tool is not offered, as under `tools.deny`, instead of being
    offered and refused at each call."""
    limits = task.spec.limits
    offered = list(tools)
    if task.spec.agents and depth < limits.max_depth:
        offered.append(agent_tool(task.spec.agents, limits.max_parallel_agents))
    _, deny = task.spec.permissions.rules()
    whole = [rule for rule in deny if rule.argument is None]
    return [spec for spec in offered if not any(rule.names(spec.name) for rule in whole)]


def agent_concurrency(task: Task) -> Concurrency:
    """The loop's batching: consecutive sub_agent calls run at once (the executor gates them)."""
    if not task.spec.agents:
        return Concurrency()
    # The limit is enforced by AgentTools' own gate, so that each call takes its index in the
    # reply in call order, before it waits for a free slot.
    return Concurrency((Lane(frozenset({SUB_AGENT}), limit=sys.maxsize),))


def call_concurrency(task: Task, tools: Sequence[ToolSpec], max_parallel_reads: int) -> Concurrency:
    """The session's lanes: its sub_agent calls, and calls of its read-only tools."""
    return agent_concurrency(task).with_lane(read_lane(task, tools, max_parallel_reads))
