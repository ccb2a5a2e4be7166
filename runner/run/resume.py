"""`resume`: continue sessions from their logs, possibly on another machine (DESIGN section 8)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.errors import ConfigError
from runner.llm import Message
from runner.mcp import workspace_extension
from runner.outcome import Totals
from runner.redact import MASK, Redactor
from runner.run.agent_resume import settled_agent_calls
from runner.run.app import Job, RunOptions, execute, prepare_jobs
from runner.run.session import ResumePoint
from runner.sessionlog import SessionRecord, read_session, rebuild_messages, sessions_to_resume
from runner.settings import Settings, environ
from runner.task import Limits, Task, TaskSpec, load_tasks, parse_duration

__all__ = ["default_message", "resume_sessions"]


def resume_sessions(
    paths: Sequence[str], args: Any, settings: Settings, options: RunOptions
) -> int:
    """The `resume` command: one new session per log, each linked to its parent."""
    logs: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            logs.extend(sessions_to_resume(path))
        elif path.is_file():
            logs.append(path)
        else:
            raise ConfigError(f"{text}: no such session log or directory")
    if not logs:
        print("nothing to resume: every session there passed", file=sys.stderr)
        return 0
    jobs: list[Job] = []
    for log in logs:
        record = read_session(log)
        if record.header.get("parent_session_id"):
            raise ConfigError(
                f"{log}: a sub-agent's session; resume its parent "
                f"{record.header['parent_session_id']} instead"
            )
        task = _with_limits(_task_for(record, settings), args)
        model = args.model or str(record.header.get("model") or "") or None
        if args.model and args.model != record.header.get("model"):
            _warn(f"{log}: model drifted: was {record.header.get('model')}, now {args.model}")
        [job] = prepare_jobs([task], settings, model)
        job.resume = _resume_point(record, args.message)
        jobs.append(job)
    return execute(jobs, settings, options)


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def _resume_point(record: SessionRecord, message: str | None) -> ResumePoint:
    context = [Message(m["role"], m["content"]) for m in rebuild_messages(record)]  # type: ignore[arg-type]
    text = message or default_message(record)
    settled = settled_agent_calls(record)  # sub-agents the cut-off reply started
    if settled:
        text = f"{settled}\n\n{text}"
    if context and context[-1].role == "user":
        # The parent stopped before the model answered its last message: fold the two together
        # so that roles keep alternating.
        text = f"{context.pop().content}\n\n{text}"
    return ResumePoint(
        parent_id=record.session_id,
        messages=context,
        message=text,
        budget_used=_used(record),
        expected_tools=tuple(t.get("name", "") for t in record.header.get("tools") or []),
    )


def default_message(record: SessionRecord) -> str:
    """The user message that continues a session, naming why the last run stopped."""
    end = record.end
    if end is None:
        why = "was cut off before it finished (the process ended without a final record)"
    else:
        why = f"ended as {end.get('status')}: {end.get('reason') or 'no reason recorded'}"
    return (
        f"The previous run of this task {why}. Continue the task from where it stopped: check "
        "the current state of the files first, then finish the work and call attempt_completion."
    )


def _used(record: SessionRecord) -> Totals:
    """What the parent session spent; limits stay cumulative across resumes."""
    if record.end is not None and isinstance(record.end.get("totals"), dict):
        totals = record.end["totals"]
        return Totals(**{k: totals[k] for k in Totals.__dataclass_fields__ if k in totals})
    used = Totals()
    for event in record.events:
        if event.get("type") == "model_call":
            usage = event.get("usage") or {}
            used = used + Totals(
                turns=1,
                input_tokens=int(usage.get("input_tokens", 0)),
                output_tokens=int(usage.get("output_tokens", 0)),
                cache_read_tokens=int(usage.get("cache_read_tokens", 0)),
                cache_write_tokens=int(usage.get("cache_write_tokens", 0)),
                cost_usd=float(event.get("cost_usd") or 0.0),
            )
    return used


def _task_for(record: SessionRecord, settings: Settings) -> Task:
    """The task from its file when it is still there (warning on drift), else from the header."""
    recorded: dict[str, Any] = dict(record.header.get("task") or {})
    name = str(recorded.get("name", ""))
    task_file = Path(str(record.header.get("task_file") or ""))
    if task_file.is_file():
        try:
            tasks = load_tasks(
                [task_file],
                params=recorded.get("params") or {},
                config_extensions=settings.extensions,
                env=environ(),
                config_agents=settings.agents,
            )
        except ConfigError as exc:
            _warn(f"{task_file} no longer loads ({exc}); resuming from the logged task")
            tasks = []
        for task in tasks:
            if task.name == name:
                _warn_on_drift(record, task, settings)
                return task
    return _task_from_record(record, recorded)


def _warn_on_drift(record: SessionRecord, task: Task, settings: Settings) -> None:
    redactor = Redactor([*settings.secret_values(), *task.secrets])
    now = json.loads(json.dumps(redactor.data(task.record())))
    before = record.header.get("task") or {}
    changed = sorted(k for k in set(now) | set(before) if now.get(k) != before.get(k))
    if changed:
        _warn(f"{record.path}: task {task.name!r} drifted since the session: {', '.join(changed)}")


def _task_from_record(record: SessionRecord, recorded: dict[str, Any]) -> Task:
    workdir = Path(str(recorded.get("workdir", ".")))
    if not workdir.is_dir():
        _warn(f"{record.path}: workdir {workdir} does not exist here; using {Path.cwd()}")
        workdir = Path.cwd()
    fields = {k: v for k, v in recorded.items() if k in TaskSpec.model_fields}
    fields["extensions"] = {}
    spec = TaskSpec.model_validate(fields)
    from runner.mcp import WORKSPACE, ExtensionConfig

    extensions = {WORKSPACE: workspace_extension(workdir)}
    for key, ext in (recorded.get("extensions") or {}).items():
        if key == WORKSPACE:
            extensions[key] = extensions[key].model_copy(
                update={"enabled": ext.get("enabled", True)}
            )
        elif MASK in json.dumps([ext.get("envs"), ext.get("headers")]):
            _warn(f"{record.path}: extension {key!r} needs secrets the log does not hold; skipped")
        else:
            extensions[key] = ExtensionConfig.model_validate(ext)
    return Task(
        name=spec.name,
        file=Path(str(recorded.get("file", record.path))),
        line=1,
        spec=spec,
        workdir=workdir.resolve(),
        prompt_dirs=(),
        extensions=extensions,
        params=dict(recorded.get("params") or {}),
    )


def _with_limits(task: Task, args: Any) -> Task:
    raised: dict[str, Any] = {}
    if args.max_turns is not None:
        raised["max_turns"] = args.max_turns
    if args.max_tokens is not None:
        raised["max_tokens"] = args.max_tokens
    if args.task_max_cost_usd is not None:
        raised["max_cost_usd"] = args.task_max_cost_usd
    if args.timeout is not None:
        try:
            raised["timeout"] = parse_duration(args.timeout)
        except ValueError as exc:
            raise ConfigError(f"--timeout: {exc}") from None
    if not raised:
        return task
    limits = Limits.model_validate({**task.spec.limits.model_dump(), **raised})
    spec = task.spec.model_copy(update={"limits": limits})
    return Task(**{**task.__dict__, "spec": spec})
