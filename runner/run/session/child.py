"""One sub-agent's session (DESIGN section 13): a fresh context on the parent's MCP servers.

Same static sections as the parent with the agent's `prompt` as ROLE, a catalogue of only the
tools it may call, the `sub_agent` task as its first user message, a log of its own linked to the
parent, and a budget charged to the parent's too. However it ends, it comes back as one tool
result for the parent; only a cancellation (a signal, the parent's time limit) goes through.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass

from runner import __version__
from runner.errors import ProviderError, RunnerError
from runner.llm import LLM, Message, Usage, context_window_of, cost_usd, create_llm
from runner.outcome import Status
from runner.prompt import RequestMeter, render_sections
from runner.run.agents import AgentTools, RunContext, SessionFrame, call_concurrency
from runner.run.session.header import totals_of
from runner.run.session.tools import task_prompt_sections
from runner.run.telemetry import traced_llm, traced_tools
from runner.run.turn import (
    AgentGaveUp,
    Budget,
    Compactor,
    LimitExceeded,
    NativeModel,
    native_tools_for,
    run_loop,
    task_in_mode,
)
from runner.sessionlog import LogWriteError, SessionLogWriter, new_session_id
from runner.task import AgentSpec
from runner.toolcall import ToolResult

__all__ = ["ChildBudget", "run_child"]


@dataclass
class ChildBudget(Budget):
    """A child's own limits, charged to its parent too and bounded by what the parent has left
    (tokens and cost; turn limits are per session). The run's cost cap is charged once."""

    parent: Budget | None = None

    def check(self) -> None:
        super().check()
        parent = self.parent
        while parent is not None:
            if parent.max_tokens is not None and parent.usage.total >= parent.max_tokens:
                raise LimitExceeded(
                    "tokens",
                    f"the parent's token limit reached ({parent.usage.total}/{parent.max_tokens})",
                )
            if parent.max_cost_usd is not None and parent.cost_usd >= parent.max_cost_usd:
                raise LimitExceeded(
                    "cost",
                    f"the parent's cost limit reached "
                    f"(${parent.cost_usd:.4f}/${parent.max_cost_usd:.2f})",
                )
            parent = parent.parent if isinstance(parent, ChildBudget) else None

    def cost_holders(self) -> Iterator[Budget]:
        """This child's budget and every parent's: a child's calls are held against them all."""
        budget: Budget | None = self
        while budget is not None:
            yield budget
            budget = budget.parent if isinstance(budget, ChildBudget) else None

    def charge(self, usage: Usage, cost_usd: float) -> None:
        super().charge(usage, cost_usd)
        parent = self.parent
        while parent is not None:
            parent.usage = parent.usage + usage
            parent.cost_usd += cost_usd
            parent = parent.parent if isinstance(parent, ChildBudget) else None


@dataclass
class _Child:
    """What one child session has opened so far, for the clean-up."""

    name: str
    started: float
    llm: LLM | None = None
    log: SessionLogWriter | None = None


Ending = tuple[Status, str, str, str]
"""(status, kind, reason, result) of a child session."""


async def run_child(
    tools: AgentTools, name: str, agent: AgentSpec, task_text: str, *, index: int
) -> ToolResult:
    """Run agent `name` on `task_text` to its end: its result, or why it has none (a
    `ChildRunner`: the executor it builds for the child runs the child's own sub_agent calls
    with the same runner)."""
    frame, ctx = tools.frame, tools.ctx
    limits = agent.limits
    budget = ChildBudget(
        limits.max_turns,
        limits.max_tokens,
        limits.max_cost_usd,
        ctx.run_budget,
        parent=frame.budget,
        # Held while a call runs, as the parent's are: without it a child's estimate was its
        # prompt alone, and children at once overshot the parent's limit.
        reserve_output_tokens=frame.budget.reserve_output_tokens,
    )
    child_frame = SessionFrame(
        task=frame.task,
        llm=frame.llm,
        log=frame.log,  # replaced by the child's own log once it is open
        budget=budget,
        redactor=frame.redactor,
        depth=frame.depth + 1,
        policies=(*frame.policies, (name, agent.tools)),
        children=frame.children,
    )
    executor = AgentTools(tools.hub, child_frame, ctx, tools.run_child)
    child = _Child(name, time.monotonic())
    ending: Ending
    try:
        ending = await _converse(executor, frame, child, agent, task_text, index)
    except LimitExceeded as limit:
        ending = "budget_exceeded", limit.kind, str(limit), ""
    except AgentGaveUp as gave_up:
        ending = "failed", "no_tool_call", str(gave_up), ""
    except asyncio.CancelledError:
        why = (
            "interrupted by a signal"
            if ctx.interrupted
            else "stopped: its parent session stopped (its time limit, or a signal)"
        )
        _end(child, "interrupted", why, budget, None, "signal")
        raise
    except RunnerError as error:
        kind = (
            "provider"
            if isinstance(error, ProviderError)
            else "artifacts"
            if isinstance(error, LogWriteError)
            else "config"
        )
        ending = "error", kind, str(error), ""
    except Exception as error:  # a bug: the parent goes on, the traceback is kept
        ending = "error", "internal", f"internal error: {error!r}", ""
        if child.log is not None:
            with contextlib.suppress(LogWriteError):
                child.log.warning(traceback.format_exc())
    finally:
        await _close_model(child.llm, frame.llm)
    status, kind, reason, result = ending
    _end(child, status, reason, budget, result or None, kind)
    fields = {"child_session_id": child.log.session_id} if child.log is not None else {}
    text = frame.redactor.text(_result_text(child, ending))
    return ToolResult(text, is_error=status != "passed", log_fields=fields)


async def _converse(
    executor: AgentTools,
    parent: SessionFrame,
    child: _Child,
    agent: AgentSpec,
    task_text: str,
    index: int,
) -> Ending:
    frame, ctx = executor.frame, executor.ctx
    llm = child.llm = traced_llm(_model_for(agent, parent.llm, ctx))
    offered = executor.tools()
    # The parent's tool mode, when the agent's model can call tools natively; else xml.
    native = native_tools_for(frame.task, llm, offered)
    sections = task_prompt_sections(
        task_in_mode(frame.task, "native" if native else "xml"),
        ctx.settings,
        offered,
        ctx.env,
        sections={**frame.task.spec.sections, "ROLE": agent.prompt},
        mask=frame.redactor.text,
    )
    system = render_sections(sections)
    parent_call = {
        "turn": parent.budget.turns,
        "index": index,
        "agent": child.name,
        "task": task_text,
    }
    log = child.log = SessionLogWriter.create(
        ctx.out_dir,
        {
            "session_id": new_session_id(f"{frame.task.name}-{child.name}"),
            "run_id": ctx.run_id,
            "runner_version": __version__,
            "task": {**frame.task.record(), "agent": child.name},
            "task_file": str(frame.task.file),
            "model": f"{llm.provider}:{llm.model}",
            "system_prompt": system,
            "tools": offered,
            "tool_mode": "native" if native else "xml",
            "parent_session_id": parent.log.session_id,
            "parent_call": parent_call,
        },
        frame.redactor,
        events=ctx.events,
    )
    frame.log = log
    frame.children.append(log.session_id)
    info = llm.info

    def cost_of(usage: Usage) -> float:
        return cost_usd(usage, info)

    log.message("user", task_text, 0)
    timeout = agent.limits.timeout
    # The try is outside the scope: the scope turns its own cancellation into TimeoutError
    # as it exits, so a try inside it never saw the child's time limit (an "internal error").
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            completion = await run_loop(
                llm=NativeModel(llm, native) if native and llm is not parent.llm else llm,
                native=native,
                system=system,
                messages=[Message("user", task_text)],
                tools=offered,
                executor=traced_tools(executor, [*offered, *executor.denied()]),
                # Its turns and retries show on the console under the parent task's name.
                events=ctx.progress.watch_child(frame.task.name, child.name, frame.budget, log),
                budget=frame.budget,
                compactor=Compactor(
                    llm=llm,
                    system=system,
                    context_window=await context_window_of(llm),
                    events=log,
                    budget=frame.budget,
                    cost_of=cost_of,
                ),
                cost_of=cost_of,
                denied=executor.denied(),
                concurrency=call_concurrency(frame.task, offered, ctx.settings.max_parallel_reads),
                meter=RequestMeter(system, sections, llm.provider),
            )
    except TimeoutError:
        if scope.expired():
            raise LimitExceeded("time", f"time limit reached ({timeout:g}s)") from None
        raise
    if completion.status == "failure":
        return "failed", "agent", "the sub-agent reported failure", completion.result
    return "passed", "", "completed", completion.result


def _model_for(agent: AgentSpec, parent: LLM, ctx: RunContext) -> LLM:
    """The agent's model: the parent's unless it names another (one instance per run)."""
    spec = agent.model
    if spec is None or spec == f"{parent.provider}:{parent.model}":
        return parent
    llm = ctx.models.get(spec)
    if llm is None:
        llm = create_llm(spec, ctx.settings)
        if getattr(llm, "shareable", False):
            ctx.models[spec] = llm  # closed with the run's other models
    return llm


async def _close_model(llm: LLM | None, parent: LLM) -> None:
    """Close a model made for this child alone (a shared one is closed with the run)."""
    if llm is None or llm is parent or getattr(llm, "shareable", False):
        return
    close = getattr(llm, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


def _end(
    child: _Child,
    status: Status,
    reason: str,
    budget: Budget,
    result: str | None,
    kind: str,
) -> None:
    log = child.log
    if log is None or log.ended:
        return
    totals = totals_of(budget, child.started)
    with contextlib.suppress(LogWriteError):  # the parent's result says what happened anyway
        log.end(status, reason, totals, result, kind=kind or None)


def _result_text(child: _Child, ending: Ending) -> str:
    status, kind, reason, result = ending
    if status == "passed":
        return result
    name = child.name
    session = f" (session {child.log.session_id})" if child.log is not None else ""
    if status == "failed" and kind == "agent":
        return f"Sub-agent {name!r} reported failure{session}: {result or reason}"
    if status == "failed":
        return f"Sub-agent {name!r} failed{session}: {reason}"
    if status == "budget_exceeded":
        return (
            f"Sub-agent {name!r} stopped at its {kind} limit before completing{session}: {reason}"
        )
    return f"Sub-agent {name!r} stopped with an error ({kind}){session}: {reason}"
