"""The executor of a session whose task has sub-agents (DESIGN section 13).

The parent's tool executor becomes an `AgentTools`: a `sub_agent` call starts a child session
and every other call goes to the task's hub, checked first against the policies of the agents it
runs under (the hub itself enforces the task's own). A reply's consecutive `sub_agent` calls run
at once (`runner.run.turn.batch`), at most `limits.max_parallel_agents` at a time, and their
results come back in call order.

A child session is a session that may offer `sub_agent` in its turn, so sub-agents recurse. The
recursion goes through `ChildRunner`, handed to the executor by the session that makes it (and by
each child session to its own executor): this room never imports a session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runner.errors import ConfigError
from runner.llm import LLM
from runner.mcp import ToolPolicy, policy_allows
from runner.redact import Redactor
from runner.run.agents.tool import SUB_AGENT, agent_tool, offered_tools
from runner.run.telemetry import Progress, traced_agent
from runner.run.turn import Budget, RunBudget
from runner.sessionlog import EventStream, SessionLogWriter
from runner.settings import Settings
from runner.task import AgentSpec, Task, agent_tool_problems
from runner.toolcall import ToolResult, ToolSpec

__all__ = [
    "AgentTools",
    "ChildRunner",
    "RunContext",
    "SessionFrame",
    "ToolHub",
    "agent_executor",
    "close_agent_models",
]


class RunContext(Protocol):
    """What sub-agents need of the run (`runner.run.session.RunContext` fits)."""

    settings: Settings
    run_id: str
    out_dir: Path
    redactor: Redactor
    events: EventStream | None
    env: dict[str, str]
    run_budget: RunBudget
    interrupted: bool
    models: dict[str, LLM]
    progress: Progress


class ChildRunner(Protocol):
    """Runs one sub-agent's session to its end and gives its result as one tool result
    (`runner.run.session.run_child` fits); `index` is the call's place in its reply."""

    def __call__(
        self, tools: AgentTools, name: str, agent: AgentSpec, task: str, /, *, index: int
    ) -> Awaitable[ToolResult]: ...


class ToolHub(Protocol):
    """What the sub-agents need of the task's hub (`runner.mcp.McpHub` fits)."""

    @property
    def tools(self) -> list[ToolSpec]: ...
    @property
    def allowed_tools(self) -> list[ToolSpec]: ...
    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...


@dataclass
class SessionFrame:
    """The session that calls `sub_agent`: where its children log, charge and link to."""

    task: Task
    llm: LLM
    """The session's model: a child without `model:` uses it."""
    log: SessionLogWriter
    budget: Budget
    redactor: Redactor
    depth: int = 0
    """0 for the task's own session, 1 for its children, ..."""
    policies: tuple[tuple[str, ToolPolicy], ...] = ()
    """The policies of the agents this session runs under, outermost first."""
    children: list[str] = field(default_factory=list)
    """Every child session id started under the task (shared by all levels), in start order."""


class AgentTools:
    """A session's tool executor when the task has agents (or the session is a sub-agent)."""

    def __init__(
        self, hub: ToolHub, frame: SessionFrame, ctx: RunContext, run_child: ChildRunner
    ) -> None:
        self.hub = hub
        self.frame = frame
        self.ctx = ctx
        """The run's `RunContext` (settings, out folder, run budget, signals)."""
        self.run_child = run_child
        """Starts a `sub_agent` call's session; a child's executor gets the same one."""
        self._gate = asyncio.Semaphore(frame.task.spec.limits.max_parallel_agents)
        self._turn = -1
        self._index = 0

    def tools(self) -> list[ToolSpec]:
        """The tools this session is offered: the hub's, narrowed by the agents' policies."""
        allowed = [spec for spec in self.hub.allowed_tools if self.refusal(spec.name) is None]
        return offered_tools(self.frame.task, allowed, self.frame.depth)

    def denied(self) -> list[ToolSpec]:
        """Tools not offered whose calls still get an error result (not 'no such tool')."""
        offered = {spec.name for spec in self.tools()}
        denied = [spec for spec in self.hub.tools if spec.name not in offered]
        if SUB_AGENT not in offered and self.frame.task.spec.agents:
            limits = self.frame.task.spec.limits
            denied.append(agent_tool(self.frame.task.spec.agents, limits.max_parallel_agents))
        return denied

    def refusal(self, name: str) -> str | None:
        """Why an agent policy forbids `name`, or None when every one allows it."""
        spec = next((t for t in self.hub.tools if t.name == name), ToolSpec(name, ""))
        for agent, policy in self.frame.policies:
            if not policy_allows(policy, spec):
                return (
                    f"Error: tool {name!r} is not allowed for sub-agent {agent!r} "
                    f"(agents.{agent}.tools.allow={policy.allow}, deny={policy.deny})."
                )
        return None

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name != SUB_AGENT:
            refused = self.refusal(name)
            if refused is not None:
                return ToolResult(refused, is_error=True)
            return await self.hub.call(name, arguments)
        index = self._next_index()  # before any await: calls take their index in call order
        limits = self.frame.task.spec.limits
        if self.frame.depth >= limits.max_depth:
            return ToolResult(
                f"Error: a sub-agent cannot start sub-agents here (limits.max_depth is "
                f"{limits.max_depth}); do the work yourself with your own tools.",
                is_error=True,
            )
        agent_name = str(arguments.get("agent", ""))
        agent = self.frame.task.spec.agents.get(agent_name)
        if agent is None:
            known = ", ".join(self.frame.task.spec.agents)
            return ToolResult(f"Error: no agent named {agent_name!r}. Agents: {known}.", True)
        async with self._gate:
            task = str(arguments.get("task", ""))
            return await traced_agent(
                agent_name, self.run_child(self, agent_name, agent, task, index=index)
            )

    def _next_index(self) -> int:
        turn = self.frame.budget.turns
        if turn != self._turn:
            self._turn, self._index = turn, 0
        index, self._index = self._index, self._index + 1
        return index


def agent_executor(
    hub: ToolHub,
    task: Task,
    llm: LLM,
    log: SessionLogWriter,
    budget: Budget,
    ctx: RunContext,
    children: list[str],
    run_child: ChildRunner,
) -> ToolHub | AgentTools:
    """The task session's executor: the hub itself, or an AgentTools when the task has agents."""
    if not task.spec.agents:
        return hub
    problems = agent_tool_problems(
        task.file,
        task.line,
        task.spec.agents,
        [t.name for t in hub.tools],
        [t.name for t in hub.allowed_tools],
    )
    if problems:  # `validate` reports these too; a run that was not validated stops here
        raise ConfigError("; ".join(str(problem) for problem in problems))
    redactor = ctx.redactor.with_secrets(task.secrets)
    frame = SessionFrame(task, llm, log, budget, redactor, children=children)
    return AgentTools(hub, frame, ctx, run_child)


async def close_agent_models(ctx: RunContext) -> None:
    """Close the models made for sub-agents (their HTTP clients) once the run is over."""
    for llm in ctx.models.values():
        close = getattr(llm, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):  # best effort: the results are in
                await close()
