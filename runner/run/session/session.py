"""One task, start to end: servers, prompt, session log, the loop, success checks, the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import traceback
from typing import Any

from runner.errors import ExitCode, RunnerError
from runner.llm import (
    LLM,
    Usage,
    context_window_of,
    cost_usd,
    max_output_tokens_for,
)
from runner.mcp import McpHub, McpLimits
from runner.outcome import Status, TaskOutcome
from runner.prompt import RequestMeter, render_sections
from runner.redact import Redactor
from runner.run.agents import agent_executor, call_concurrency, offered_tools
from runner.run.guard import (
    FindingSink,
    TaskSandbox,
    end_hooks,
    guarded,
    log_network,
    start_hooks,
    task_sandbox,
    task_skills,
    tools_with_skills,
)
from runner.run.session.checks import structured_result
from runner.run.session.child import run_child
from runner.run.session.context import RunContext, TaskState
from runner.run.session.header import (
    ResumePoint,
    end_log,
    error_kind,
    opening_messages,
    session_header,
    tool_drift,
    totals_of,
)
from runner.run.session.judge import agent_failure_reason, judge_completion, judging_start
from runner.run.session.tools import (
    check_tool_patterns,
    offered_with_search,
    task_prompt_sections,
    task_shelf,
)
from runner.run.telemetry import traced_llm, traced_tools
from runner.run.turn import (
    ANSWERED,
    AgentGaveUp,
    Budget,
    Compactor,
    LimitExceeded,
    ReplyBounds,
    WindDown,
    answer_open_calls,
    native_fields,
    native_model,
    run_loop,
)
from runner.sessionlog import LogWriteError, SessionLogWriter
from runner.task import Task
from runner.toolcall import ToolSpec

__all__ = ["ResumePoint", "RunContext", "run_task"]


async def run_task(
    task: Task, llm: LLM, ctx: RunContext, resume: ResumePoint | None = None
) -> TaskOutcome:
    """Run one task in its sandbox and return its outcome; never raises for a task-level failure."""
    async with task_sandbox(task, ctx.settings, ctx.say, ctx.out_dir) as sandbox:
        outcome = await _run_task(task, llm, ctx, resume, sandbox)
    return dataclasses.replace(outcome, sandbox=sandbox.final())


async def _run_task(
    task: Task, llm: LLM, ctx: RunContext, resume: ResumePoint | None, sandbox: TaskSandbox
) -> TaskOutcome:
    limits = task.spec.limits
    state = TaskState(sandbox=sandbox)
    if sandbox.record.status == "degraded":
        state.early_warnings.append(sandbox.record.line())
    state.budget = Budget(limits.max_turns, limits.max_tokens, limits.max_cost_usd, ctx.run_budget)
    state.budget.reserve_output_tokens = max_output_tokens_for(llm.model, ctx.settings)
    if resume is not None:
        used = resume.budget_used
        state.budget.turns = used.turns
        state.budget.cost_usd = used.cost_usd
        state.budget.tool_calls = used.tool_calls
        state.budget.usage = Usage(
            used.input_tokens, used.output_tokens, used.cache_read_tokens, used.cache_write_tokens
        )
    redactor = ctx.redactor.with_secrets((*task.secrets, *sandbox.secrets))
    state.findings = FindingSink.of(task, redactor.text, lambda: state.budget.turns, resume)
    status: Status
    try:
        status, kind, reason = await _run(task, llm, ctx, resume, state, redactor)
        code = ExitCode.OK if status == "passed" else ExitCode.FAILED
    except LimitExceeded as limit:
        status, kind, reason, code = "budget_exceeded", limit.kind, str(limit), ExitCode.BUDGET
    except AgentGaveUp as gave_up:
        status, kind, reason, code = "failed", "no_tool_call", str(gave_up), ExitCode.FAILED
    except asyncio.CancelledError:
        status, kind, reason = "interrupted", "signal", "interrupted by a signal"
        code = ctx.signal_exit
    except RunnerError as error:
        status, kind, reason, code = "error", error_kind(error), str(error), error.exit_code
    except Exception as error:  # a bug: keep the batch going, record the traceback
        status, kind, code = "error", "internal", ExitCode.INTERNAL
        reason = f"internal error: {error!r}"
        if state.log is not None and not state.log.ended:
            # The end line below reports an unwritable log; the traceback still reaches stderr.
            with contextlib.suppress(LogWriteError):
                state.log.warning(traceback.format_exc())
        ctx.say(redactor.text(traceback.format_exc()))
    if status == "passed" and (gate := state.findings.gate(ctx.settings.fail_on)):
        status, kind, reason, code = "failed", "findings", gate, ExitCode.FAILED  # DESIGN 21
    totals = totals_of(state.budget, state.started)
    result = state.completion.result if state.completion else ""
    if status != "interrupted" and state.log is not None and not state.log.ended:
        await end_hooks(state.hooks, status, reason)  # not on the way out after a signal
    left = sandbox.left_behind()  # DESIGN 24: what changed is restored, and fails the task
    if left and status != "interrupted":
        status, kind, reason, code = "failed", "security", left, ExitCode.FAILED
    lost = end_log(state.log, status, reason, totals, result, kind)
    if lost is not None and code in (ExitCode.OK, ExitCode.FAILED, ExitCode.BUDGET):
        # The outcome stands in JUnit and the summary, but the log that backs it is incomplete.
        status, kind, reason, code = "error", "artifacts", str(lost), lost.exit_code
    return TaskOutcome(
        name=task.name,
        task_file=task.file,
        status=status,
        reason=redactor.text(reason),
        result=redactor.text(result),
        kind=kind,
        exit_code=code,
        model=f"{llm.provider}:{llm.model}",
        totals=totals,
        session_log=state.log.path if state.log else None,
        session_id=state.log.session_id if state.log else "",
        check_output=redactor.text(state.check_output) if kind == "check" else "",
        structured_result=redactor.data(
            structured_result(result, task.spec.success.expect) if status == "passed" else None
        ),
        child_sessions=tuple(state.children),
        findings=state.findings.result(),
        grade=state.grading.last if state.grading else None,
        mcp_auth=tuple(record.as_json() for record in state.auth()),
    )


async def _run(
    task: Task,
    llm: LLM,
    ctx: RunContext,
    resume: ResumePoint | None,
    state: TaskState,
    redactor: Redactor,
) -> tuple[Status, str, str]:
    settings = ctx.settings
    tool_timeout = task.spec.limits.tool_timeout or settings.tool_timeout_s
    hub = McpHub(
        {name: ext for name, ext in task.extensions.items() if ext.enabled},
        policy=task.spec.tools,
        workdir=task.workdir,
        # A folder name cannot be masked once written: no secret of the task name in it.
        artifacts_dir=ctx.out_dir / "mcp-logs" / _logs_name(task, redactor),
        startup_timeout_s=settings.mcp_startup_timeout_s,
        default_tool_timeout_s=tool_timeout,
        base_env=ctx.env,
        workspace_limits=settings.workspace_limits,
        on_event=lambda event: _hub_event(state, ctx, redactor, event),
        redactor=redactor,
        limits=McpLimits.from_settings(settings),
    )
    try:
        if state.sandbox is not None and state.sandbox.error is not None:
            raise state.sandbox.error  # before any server starts or the model is called
        async with hub:  # stops every server on the way out, cancellation included
            state.auth = lambda: hub.auth
            skills = task_skills(
                task, lambda line: _early_warning(state, ctx, redactor, f"[{task.name}] {line}")
            )
            own = tools_with_skills(task, hub.tools, hub.allowed_tools, skills)
            tools = offered_tools(task, state.findings.tools(own))
            check_tool_patterns(task, [*hub.tools, *tools])
            state.shelf = task_shelf(task, settings, tools, await context_window_of(llm))
            state.shelf.load(resume.loaded_tools if resume is not None else ())
            tools = offered_with_search(tools, state.shelf)
            sections = task_prompt_sections(
                task, settings, tools, ctx.env, mask=redactor.text, skills=skills, shelf=state.shelf
            )
            system = render_sections(sections)
            state.meter = RequestMeter(system, sections, llm.provider)
            _open_log(task, llm, ctx, state, redactor, system, tools, resume)
            if resume is not None and state.log is not None:
                drift = tool_drift(resume.expected_tools, tools)
                if drift:
                    state.log.warning(drift)
                    ctx.say(f"warning: {drift}")
            state.hooks = start_hooks(
                task,
                ctx.env,
                state.log,
                lambda line: _warn(ctx, redactor, line),
                tools,
                lambda: state.budget.turns,
                mask=redactor.text,
            )
            executor = guarded(task, hub, own, skills, state.hooks)
            state.executor = state.findings.wrap(executor, state.log)
            # Everything imported and built so far lives for the whole run; the collector need not
            # walk it again. Without this, every full collection walks the SDKs' ~200k objects and
            # stalls a turn for over 100 ms.
            gc.freeze()
            return await _converse(task, llm, ctx, resume, state, system, tools, hub)
    except BaseException:
        if state.log is None:  # failed before the header: still leave a log that says why
            _open_log(task, llm, ctx, state, redactor, "", [], resume)
        raise


def _open_log(
    task: Task,
    llm: LLM,
    ctx: RunContext,
    state: TaskState,
    redactor: Redactor,
    system: str,
    tools: list[ToolSpec],
    resume: ResumePoint | None,
) -> None:
    sandbox = state.sandbox.record.as_json() if state.sandbox else None
    parent = resume.parent_id if resume else None
    header = session_header(
        task, llm, ctx.run_id, parent, sandbox, system, tools, ctx.settings, redactor.data
    )
    if records := state.auth():
        header["mcp_auth"] = [record.as_json() for record in records]
    if state.shelf.loaded:  # loaded before this session (a resume): its own resume needs them
        header["loaded_tools"] = list(state.shelf.loaded)
    state.log = SessionLogWriter.create(ctx.out_dir, header, redactor, events=ctx.events)
    for line in state.early_warnings:
        state.log.warning(line)
    state.early_warnings.clear()
    proxy = state.sandbox.proxy if state.sandbox else None  # its `network` events, from now on
    log_network(proxy, state.log, lambda: state.budget.turns, lambda x: _warn(ctx, redactor, x))


async def _converse(
    task: Task,
    llm: LLM,
    ctx: RunContext,
    resume: ResumePoint | None,
    state: TaskState,
    system: str,
    tools: list[ToolSpec],
    hub: McpHub,
) -> tuple[Status, str, str]:
    log = state.log
    assert log is not None
    llm = traced_llm(llm)
    info = llm.info
    # tool_mode native: requests carry the tools (the deferred ones once loaded)
    llm, native = native_model(task, llm, tools, state.shelf)

    def cost_of(usage: Usage) -> float:
        return cost_usd(usage, info)

    opening = await state.hooks.session_start() if state.hooks else ""
    messages = opening_messages(
        task, resume, state.shelf, log, opening, tools, native is not None, state.budget.turns
    )
    compactor = Compactor(
        llm=llm,
        system=system,
        context_window=await context_window_of(llm),
        events=log,
        budget=state.budget,
        cost_of=cost_of,
    )
    success = task.spec.success
    attempts_left = success.retries
    offered = {t.name for t in tools}
    timeout = task.spec.limits.timeout
    mask = ctx.redactor.with_secrets(task.secrets).text
    state.git_before, state.grading = await judging_start(
        task, ctx.settings, ctx.models, log, state.budget, ctx.env, mask
    )
    wind_down = WindDown(state.budget, timeout)
    executor = traced_tools(
        agent_executor(
            state.executor or hub, task, llm, log, state.budget, ctx, state.children, run_child
        ),
        [*hub.tools, *tools],
    )
    try:
        async with asyncio.timeout(timeout) as scope:
            while True:
                state.completion = await run_loop(
                    llm=llm,
                    system=system,
                    messages=messages,
                    tools=tools,
                    executor=executor,
                    events=ctx.progress.watch(task.name, state.budget, log),
                    budget=state.budget,
                    compactor=compactor,
                    cost_of=cost_of,
                    denied=[t for t in hub.tools if t.name not in offered],
                    wind_down=wind_down,
                    concurrency=call_concurrency(task, tools, ctx.settings.max_parallel_reads),
                    bounds=ReplyBounds(
                        ctx.settings.max_tool_calls_per_reply, ctx.settings.max_turn_results_chars
                    ),
                    native=native,
                    meter=state.meter,
                    shelf=state.shelf,
                )
                if state.completion.status == "failure":
                    return "failed", "agent", agent_failure_reason(state.completion.result, mask)
                attempt = success.retries - attempts_left + 1
                verdict = await judge_completion(
                    task,
                    state.completion.result,
                    env=ctx.env,
                    log=log,
                    budget=state.budget,
                    hooks=state.hooks,
                    git_before=state.git_before,
                    attempt=attempt,
                    attempts_left=attempts_left,
                    mask=mask,
                    grading=state.grading,
                )
                if verdict is None:
                    return "passed", "", "completed; checks passed"
                state.check_output = verdict.check_output
                if attempts_left <= 0 or verdict.kind == "requirement":
                    return "failed", verdict.kind, verdict.reason
                attempts_left -= 1
                retry = answer_open_calls(messages, verdict.feedback, ANSWERED)
                messages.append(retry)
                log.message("user", retry.content, state.budget.turns, **native_fields(retry))
    except TimeoutError:
        if not scope.expired():
            raise
        limit = LimitExceeded("time", f"time limit reached ({timeout:g}s)")
        report = await wind_down.final_report(limit, llm, system, messages, log, cost_of, ctx.say)
        state.completion = report or state.completion
        raise limit from None
    except LimitExceeded as limit:
        report = await wind_down.final_report(limit, llm, system, messages, log, cost_of, ctx.say)
        state.completion = report or state.completion
        raise


def _logs_name(task: Task, redactor: Redactor) -> str:
    """The MCP logs' folder: the task's name (a sample's with `.i`), no secret in it."""
    return redactor.text(task.name).replace("*", "_") + (f".{task.sample}" if task.of else "")


def _warn(ctx: RunContext, redactor: Redactor, line: str) -> None:
    ctx.say(redactor.text(f"warning: {line}"))


def _early_warning(state: TaskState, ctx: RunContext, redactor: Redactor, line: str) -> None:
    """A warning of the task's from before its log is open: the console now, the log later."""
    _warn(ctx, redactor, line)
    state.early_warnings.append(line)


def _hub_event(state: TaskState, ctx: RunContext, redactor: Redactor, event: Any) -> None:
    if event.kind in {"warning", "restart"}:
        line = f"[{event.server}] {event.message}"
        ctx.say(redactor.text(f"warning: {line}"))
        if state.log is None:
            state.early_warnings.append(line)
        elif not state.log.ended:
            state.log.warning(line)
