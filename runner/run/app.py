"""`run` and `resume`: select tasks, run them at once, write the reports, pick the exit code."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner import __version__
from runner.errors import ConfigError, ExitCode, worst_exit_code
from runner.fleet import open_governor, use_governor
from runner.outcome import RunSummary, TaskOutcome
from runner.redact import Redactor, on_registered, short_secret_warnings
from runner.report import (
    GitHubActions,
    add_mask_lines,
    error_annotation,
    exit_code_of,
    final_table,
    finding_annotations,
    findings_table,
    summary_json,
    summary_text,
    task_started_line,
    verdict_lost,
    write_outputs,
    write_result_file,
    write_results,
    write_review,
    write_sarif,
    write_step_summary,
    write_summary_json,
)
from runner.run.agents import close_agent_models
from runner.run.plan import (
    Job,
    PromptTask,
    RunOptions,
    check_out_dir,
    expand_samples,
    load_prompt_task,
    load_selected_tasks,
    prepare_jobs,
    prompt_task_path,
    said_with_flags,
    select_tasks,
    shard_samples,
)
from runner.run.resume import other_samples, resumed_jobs
from runner.run.session import RunContext, check_isolation, run_in_isolation, run_task
from runner.run.telemetry import (
    Console,
    Progress,
    Watchdog,
    abandon_traces,
    annotate_run,
    append_step_summary,
    print_result,
    report_finished,
    traced_run,
    traced_task,
)
from runner.sessionlog import EventStream
from runner.settings import Settings, environ

__all__ = ["execute", "resume_sessions", "run_tasks"]


def run_tasks(
    paths: Sequence[str] | PromptTask,
    params: Mapping[str, str],
    selection: tuple[Sequence[str] | None, str | None],
    model: str | None,
    settings: Settings,
    options: RunOptions,
) -> int:
    """The `run` command: task files, or one `-p` prompt; `selection` is (`--filter` globs,
    `--shard`)."""
    if not isinstance(paths, PromptTask):
        return _run_tasks(paths, params, selection, model, settings, options)
    try:
        return _run_tasks(paths, params, selection, model, settings, options)
    except ConfigError as error:  # about the generated task file: say it with the flags
        path = prompt_task_path(paths, options.out)
        overrides = options.overrides
        raise said_with_flags(error, path, overrides.allow, overrides.deny) from None


def _run_tasks(
    paths: Sequence[str] | PromptTask,
    params: Mapping[str, str],
    selection: tuple[Sequence[str] | None, str | None],
    model: str | None,
    settings: Settings,
    options: RunOptions,
) -> int:
    if isinstance(paths, PromptTask):
        tasks = load_prompt_task(paths, params, settings, options.out)
    else:
        tasks = load_selected_tasks(paths, params, settings)
    selected = select_tasks(tasks, selection[0], None)
    tasks = [options.overrides.apply(task) for task in selected]
    tasks = expand_samples(tasks, options.repeat, options.isolation, environ())  # DESIGN 22
    tasks = shard_samples(tasks, selection[1])
    jobs = prepare_jobs(tasks, settings, model)
    return execute(jobs, settings, options)


def resume_sessions(
    paths: Sequence[str], args: Any, settings: Settings, options: RunOptions
) -> int:
    """The `resume` command: one new session per log, each linked to its parent."""
    jobs = resumed_jobs(paths, args, settings, options)
    if not jobs:
        print("nothing to resume: every session there passed", file=sys.stderr)
        return 0
    # A repeated task is reported over all K: the samples not run again, as their logs ended.
    return execute(jobs, settings, options, other_samples(paths, jobs))


def execute(
    jobs: list[Job], settings: Settings, options: RunOptions, carried: Sequence[TaskOutcome] = ()
) -> int:
    """Run the jobs, write the reports, return the run's exit code; `carried` outcomes (samples
    of an earlier run that do not run again) are reported with the jobs'."""
    codes = {signal.SIGINT: ExitCode.SIGINT, signal.SIGTERM: ExitCode.SIGTERM}
    parents = [(job.task, job.resume.worktree if job.resume else None) for job in jobs]
    check_isolation(parents, settings.jobs, options.isolation, environ())
    check_out_dir(options.out, options.junit)
    with (
        Watchdog(settings.shutdown_grace_s, codes) as watchdog,
        traced_run(environ(), len(jobs)) as trace,
    ):
        return trace.finish(_execute(jobs, settings, options, watchdog, carried))


def _execute(
    jobs: list[Job],
    settings: Settings,
    options: RunOptions,
    watchdog: Watchdog,
    carried: Sequence[TaskOutcome] = (),
) -> int:
    env = environ()
    secrets = settings.named_secrets()
    for job in jobs:
        secrets.update(job.task.named_secrets)
    redactor = Redactor(secrets.values())
    github = GitHubActions.from_env(env)
    # stdout holds one JSON document (--output json), the event stream (--events -) or the
    # result text (run -p, --result-file -).
    stream = sys.stderr if options.console_on_stderr else sys.stdout
    console = Console(redactor, stream, options.quiet)
    for warning in short_secret_warnings(secrets):
        console.diagnostic(warning)
    if github is not None:
        for line in add_mask_lines(redactor.secrets):
            console.command(line)
    # Tokens an MCP server's authorization server issues mid-run (DESIGN 26) too, until the run
    # ends (a run in-process must not leave its console listening).
    forget_listener = (
        on_registered(lambda values: console.commands(add_mask_lines(values)))
        if github is not None
        else (lambda: None)
    )
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    ctx = RunContext(
        settings=settings,
        run_id=run_id,
        out_dir=options.out,
        redactor=redactor,
        env=env,
        say=console.diagnostic,
        progress=Progress.for_console(console.line, stream, options, settings.progress_interval_s),
    )
    ctx.run_budget.max_cost_usd = settings.max_cost_usd
    ctx.governor = ctx.run_budget.governor = open_governor(
        settings.governor,
        env,
        settings.governor_url,
        settings.fleet_max_cost_usd,
        console.diagnostic,
    )
    annotate_run(run_id, redactor, console.diagnostic)
    results: dict[int, TaskOutcome] = {}
    watchdog.on_stuck = lambda sig: _write_stuck_reports(jobs, results, ctx, options, console, sig)
    ctx.events = EventStream.open(options.events) if options.events else None
    try:
        return _finish(jobs, ctx, options, console, github, watchdog, results, carried)
    finally:
        forget_listener()
        if ctx.events is not None:
            ctx.events.close()


def _finish(
    jobs: list[Job],
    ctx: RunContext,
    options: RunOptions,
    console: Console,
    github: GitHubActions | None,
    watchdog: Watchdog,
    results: dict[int, TaskOutcome],
    carried: Sequence[TaskOutcome],
) -> int:
    """Run the jobs, then write the reports and say the run's end on every stream."""
    settings, redactor, run_id = ctx.settings, ctx.redactor, ctx.run_id
    outcomes = asyncio.run(
        _run_all(jobs, ctx, settings.jobs, options, console, github is not None, results, watchdog)
    )
    if carried:  # a resumed repeated task: its samples side by side, in order
        outcomes = sorted([*carried, *outcomes], key=lambda o: (o.name, o.sample))
    junit = options.junit or options.out / "junit.xml"
    models = sorted({o.model for o in outcomes})
    summary = RunSummary(
        run_id=run_id,
        runner_version=__version__,
        model=", ".join(models),
        outcomes=outcomes,
        exit_code=exit_code_of(outcomes, options.min_pass_rate),
        out_dir=options.out,
        junit_path=junit,
        min_pass_rate=options.min_pass_rate,
        fleet=ctx.fleet,
    )
    with watchdog.reporting():
        summary = _write_reports(summary, junit, redactor, console, options.result_file)
    watchdog.reports_written()
    if ctx.events is not None:
        ctx.events.run_end(redactor.data(summary_json(summary)))
    if options.output == "json":
        print(summary_text(summary, redactor))
    else:
        console.always(final_table(summary, redactor=redactor))
    if options.result_on_stdout and str(options.result_file) != "-":
        print_result(summary, redactor)
    if github is not None:
        failed = [line for o in outcomes if (line := error_annotation(o, redactor=redactor))]
        for line in [*failed, *finding_annotations(outcomes, redactor, len(failed))]:
            console.command(line)
        if github.step_summary is not None:
            write_step_summary(summary, github.step_summary, redactor)
            append_step_summary(github.step_summary, findings_table(outcomes, redactor))
        if github.output is not None:
            write_outputs(summary, github.output, redactor)
    return summary.exit_code


def _write_reports(
    summary: RunSummary,
    junit: Path,
    redactor: Redactor,
    console: Console,
    result_file: Path | None = None,
) -> RunSummary:
    """Write JUnit, then summary.json; one that cannot be written is reported and makes the exit
    code 4 (an unwritable or full artifacts folder), and the other is still written."""
    from runner.report.junit import write_junit  # junit_xml and ElementTree: not before the run

    writers: list[tuple[Path, Callable[[RunSummary, Path, Redactor], None]]] = [
        (junit, write_junit),
        (summary.out_dir / "summary.json", write_summary_json),
        (summary.out_dir / "results", write_results),
        (summary.out_dir / "findings.sarif", write_sarif),
        (summary.out_dir / "review.json", write_review),
        *([(result_file, write_result_file)] if result_file else []),
    ]
    for path, write in writers:
        try:
            write(summary, path, redactor)
        except OSError as error:
            console.diagnostic(
                f"agent-runner: cannot write {path}: {error.strerror or error} (check that its"
                " folder is writable and its disk has space)"
            )
            code = worst_exit_code([summary.exit_code, ExitCode.INFRASTRUCTURE])
            summary = dataclasses.replace(summary, exit_code=code)
    return summary


async def _run_all(
    jobs: list[Job],
    ctx: RunContext,
    concurrency: int,
    options: RunOptions,
    console: Console,
    github: bool,
    results: dict[int, TaskOutcome],
    watchdog: Watchdog,
) -> list[TaskOutcome]:
    limiter = asyncio.Semaphore(concurrency)
    stop = asyncio.Event()
    rate = options.min_pass_rate

    stopped_by: list[TaskOutcome] = []  # --fail-fast: the task that stopped the run

    async def one(index: int, job: Job) -> None:
        async with limiter:
            if stop.is_set():
                return
            job.started = True
            console.line(
                task_started_line(
                    job.task.label, f"{job.llm.provider}:{job.llm.model}", redactor=ctx.redactor
                )
            )
            async with ctx.progress.task(job.task.label):
                run = run_in_isolation(
                    job.task,
                    lambda task: run_task(task, job.llm, ctx, job.resume),
                    override=options.isolation,
                    keep=options.keep_worktrees,
                    out_dir=ctx.out_dir,
                    env=ctx.env,
                    parent=job.resume.worktree if job.resume else None,
                )
                outcome = await traced_task(job.task, job.llm, ctx.redactor, run)
            results[index] = outcome = job.as_sample(outcome)
            report_finished(outcome, console, ctx.redactor, github, options.verbose)
            failed = outcome.status != "passed"
            # A failed sample stops the run only once its task can no longer pass.
            if options.fail_fast and failed and verdict_lost(outcome, results.values(), rate):
                stopped_by.append(outcome)
                stop.set()

    loop = asyncio.get_running_loop()
    use_governor(ctx.governor)  # the model calls of every task below go through it (DESIGN 25)
    tasks = [asyncio.create_task(one(i, job)) for i, job in enumerate(jobs)]
    _install_signal_handlers(watchdog, loop, ctx, stop, tasks)
    ended: list[BaseException | None] = []
    try:
        ended = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        watchdog.detach()
        await _close_models(jobs)
        await close_agent_models(ctx)
        if ctx.governor is not None:
            ctx.fleet = await ctx.governor.report()
            await ctx.governor.aclose()
    outcomes = []
    for index, job in enumerate(jobs):
        if index in results:
            outcomes.append(results[index])
        elif job.started and not ctx.interrupted:
            error = ended[index] if index < len(ended) else None
            outcomes.append(job.lost(error))
        elif ctx.interrupted:
            outcomes.append(job.not_started(ctx.signal_exit))
        elif stopped_by:
            outcomes.append(job.skipped(stopped_by[0]))
    return outcomes


def _install_signal_handlers(
    watchdog: Watchdog,
    loop: asyncio.AbstractEventLoop,
    ctx: RunContext,
    stop: asyncio.Event,
    tasks: list[asyncio.Task[None]],
) -> None:
    """Have the watchdog hand SIGINT and SIGTERM to the run's handler on `loop`."""

    def handler(sig: signal.Signals) -> None:
        # The first signal sets the code and cancels the tasks (GitHub sends SIGINT, then
        # SIGTERM 7.5 s later). A later one changes nothing: cancelling again would cut short
        # the clean-up the first one started (stopping MCP servers, writing end lines).
        if ctx.interrupted:
            return
        ctx.signal_exit = ExitCode(watchdog.codes[sig])
        ctx.interrupted = True
        stop.set()
        for task in tasks:
            task.cancel()

    watchdog.attach(loop, handler)


def _write_stuck_reports(
    jobs: list[Job],
    results: dict[int, TaskOutcome],
    ctx: RunContext,
    options: RunOptions,
    console: Console,
    sig: signal.Signals,
) -> None:
    """The watchdog's reports, when the run did not stop within the grace period of a signal."""
    ctx.signal_exit = ExitCode.SIGINT if sig == signal.SIGINT else ExitCode.SIGTERM
    ctx.interrupted = True
    stuck = f"interrupted: still running {ctx.settings.shutdown_grace_s:g} s after {sig.name}"
    outcomes = [
        results.get(i) or job.not_started(ctx.signal_exit, stuck if job.started else None)
        for i, job in enumerate(jobs)
    ]
    junit = options.junit or options.out / "junit.xml"
    summary = RunSummary(
        run_id=ctx.run_id,
        runner_version=__version__,
        model=", ".join(sorted({o.model for o in outcomes})),
        outcomes=outcomes,
        exit_code=ctx.signal_exit,
        out_dir=options.out,
        junit_path=junit,
        min_pass_rate=options.min_pass_rate,
    )
    _write_reports(summary, junit, ctx.redactor, console)
    abandon_traces()  # the process exits next: send what the open spans say


async def _close_models(jobs: list[Job]) -> None:
    """Close the providers' HTTP clients (their connection pools) before the loop ends."""
    for job in jobs:
        close = getattr(job.llm, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):  # closing is best effort; results are in
                await close()
