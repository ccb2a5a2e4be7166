"""`resume`: continue sessions from their logs, possibly on another machine (DESIGN section 8).

Each log becomes a job for `runner.run.app.execute`: its task rebuilt from the task file in this
checkout (`runner.run.resume.task`), its limits raised by the command's flags, and the point it
picks up from (the context so far, the sub-agents a cut-off reply started, the new message).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.errors import ConfigError
from runner.llm import Message
from runner.outcome import SEVERITIES, Finding, Totals
from runner.redact import Redactor
from runner.run.agents import settled_agent_calls
from runner.run.plan import Job, RunOptions, prepare_jobs
from runner.run.resume.samples import with_logged_sample
from runner.run.resume.task import check_header_names, check_task_changes, resumed_task
from runner.run.session import Located, ResumePoint, locate_in_checkout, parent_worktree
from runner.run.turn import answer_open_calls, logged_tool_mode
from runner.sessionlog import SessionRecord, read_session, rebuild_messages, sessions_to_resume
from runner.settings import Settings
from runner.task import Task

__all__ = ["default_message", "resumed_jobs"]


def resumed_jobs(
    paths: Sequence[str], args: Any, settings: Settings, options: RunOptions
) -> list[Job]:
    """The jobs of `resume`: one per log (the logs of the folders: per task, its latest session
    in any of them when that did not pass), each to run as a new session linked to its parent;
    none when there is nothing to resume."""
    logs: list[Path] = []
    folders: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            folders.append(path)
        elif path.is_file():
            logs.append(path)
        else:
            raise ConfigError(f"{text}: no such session log or directory")
    if folders:
        # Taken together: a task in two folders (two attempts of a shard) is resumed once,
        # from its latest session, and not at all when that one passed.
        logs.extend(sessions_to_resume(*folders))
    if not logs:
        return []
    workdir = _chosen_workdir(getattr(args, "workdir", None))
    redactor = Redactor(settings.secret_values())
    stream = sys.stderr if options.output == "json" or options.events == "-" else sys.stdout

    def say(line: str) -> None:
        print(redactor.text(line), file=sys.stderr if line.startswith("warning:") else stream)

    jobs: list[Job] = []
    for log in logs:
        record = read_session(log)
        if record.header.get("parent_session_id"):
            raise ConfigError(
                f"{log}: a sub-agent's session; resume its parent "
                f"{record.header['parent_session_id']} instead"
            )
        check_header_names(record)
        located = locate_in_checkout(record.header, log, Path.cwd())
        task = resumed_task(
            record,
            located,
            settings,
            params=getattr(args, "params", None) or {},
            from_log=bool(getattr(args, "from_log", False)),
            workdir=workdir,
            say=say,
        )
        task = with_logged_sample(task, record.header, log)  # a sample stays that sample
        say(_paths_line(log, located, task, task.file.is_file()))
        task = options.overrides.apply(task)
        if not getattr(args, "from_log", False):  # DESIGN 24: the task file, as the user wrote it
            accept = bool(getattr(args, "accept_task_changes", False))
            check_task_changes(record, task, settings, accept)
        model = args.model or str(record.header.get("model") or "") or None
        if args.model and args.model != record.header.get("model"):
            _warn(f"{log}: model drifted: was {record.header.get('model')}, now {args.model}")
        task = logged_tool_mode(task, record, settings, log)
        # The log's mode wins over --tool-mode (checked above) and over the task file's.
        [job] = prepare_jobs([task], settings.model_copy(update={"tool_mode": None}), model)
        job.resume = _resume_point(record, args.message)
        jobs.append(job)
    return jobs


def _chosen_workdir(text: str | Path | None) -> Path | None:
    if text is None:
        return None
    path = Path(text).resolve()
    if not path.is_dir():
        raise ConfigError(f"--workdir {text}: no such folder")
    return path


def _paths_line(log: Path, located: Located, task: Task, from_file: bool) -> str:
    """The console line that says which files a resumed task uses, and where the log came from."""
    written = f"; the log was written in {located.recorded_root}" if located.recorded_root else ""
    source = f"from {task.file}" if from_file else "as the log recorded it"
    return (
        f"resume {log}: task {task.name!r} {source}, workdir {task.workdir} "
        f"(checkout {located.root}{written})"
    )


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def _resume_point(record: SessionRecord, message: str | None) -> ResumePoint:
    context = [Message.from_record(m) for m in rebuild_messages(record)]
    text = message or default_message(record)
    settled = settled_agent_calls(record)  # sub-agents the cut-off reply started
    if settled:
        text = f"{settled}\n\n{text}"
    # Native mode: the parent's last calls that got no result (it stopped first) get one now.
    results = answer_open_calls(context, "").results
    if context and context[-1].role == "user":
        # The parent stopped before the model answered its last message: fold the two together
        # so that roles keep alternating (keeping its native results).
        last = context.pop()
        text = f"{last.content}\n\n{text}" if last.content else text
        results = last.results
    return ResumePoint(
        parent_id=record.session_id,
        messages=context,
        message=text,
        budget_used=_used(record),
        expected_tools=tuple(t.get("name", "") for t in record.header.get("tools") or []),
        worktree=parent_worktree(record.header, record.path),
        results=results,
        findings=_findings(record),
        loaded_tools=_loaded_tools(record),
    )


def _loaded_tools(record: SessionRecord) -> tuple[str, ...]:
    """The deferred tools the parent had loaded (DESIGN 28): those its own parents had (its
    header), then those its find_tools calls loaded."""
    names = [str(n) for n in record.header.get("loaded_tools") or [] if isinstance(n, str)]
    for event in record.events:
        if event.get("type") == "tool_call" and isinstance(event.get("loaded_tools"), list):
            names += [str(n) for n in event["loaded_tools"]]
    return tuple(dict.fromkeys(names))


def _findings(record: SessionRecord) -> tuple[Finding, ...]:
    """The findings the parent's log holds (DESIGN 21); a line that does not fit is left out."""
    found = []
    names = [field.name for field in dataclasses.fields(Finding)]
    for event in record.events:
        if event.get("type") != "finding":
            continue
        with contextlib.suppress(TypeError, KeyError):
            fields = {name: event[name] for name in names}
            if fields["severity"] in SEVERITIES and isinstance(fields["line"], int):
                found.append(Finding(**fields))
    return tuple(found)


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
            request = event.get("request") or {}
            used = used + Totals(
                system_tokens=int(request.get("system_tokens", 0)),
                tools_tokens=int(request.get("tools_tokens", 0)),
                messages_tokens=int(request.get("messages_tokens", 0)),
                turns=1,
                input_tokens=int(usage.get("input_tokens", 0)),
                output_tokens=int(usage.get("output_tokens", 0)),
                cache_read_tokens=int(usage.get("cache_read_tokens", 0)),
                cache_write_tokens=int(usage.get("cache_write_tokens", 0)),
                cost_usd=float(event.get("cost_usd") or 0.0),
            )
    return used
