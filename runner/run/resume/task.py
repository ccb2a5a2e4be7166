"""The task a resumed session runs: rebuilt from its task file in this checkout (DESIGN 8, 12).

A log header is an artifact that may come from anywhere: it says which task ran and how, and is
compared with the task file (drift warnings), but its success check, extension commands and
workdir never run in place of the file's. Only `--from-log` runs the task as the header recorded
it, and says so plainly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path, PurePath
from typing import Any

from pydantic import ValidationError

from runner.errors import ConfigError
from runner.mcp import WORKSPACE, ExtensionConfig, builtin_workspace_root, workspace_extension
from runner.redact import MASK, Redactor
from runner.run.plan import PROMPT_TASK_DESCRIPTION
from runner.run.session import CONFIG_PART, EXECUTABLE_PARTS, Located, task_hashes
from runner.sessionlog import SessionRecord
from runner.settings import Settings, environ
from runner.task import Task, TaskSpec, load_tasks

__all__ = ["check_header_names", "check_task_changes", "prompt_task_file", "resumed_task"]

Say = Callable[[str], None]
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""A session id that is safe as a file name (the writer makes them; an edited header may not)."""


def check_header_names(record: SessionRecord) -> None:
    """Refuse (exit 2) a header whose names could not safely become file names: the session id
    (a log's file name) and the task name (a folder under `--out`, e.g. its MCP logs)."""
    where = f"{record.path}:1"
    if not _SAFE_ID.fullmatch(record.session_id):
        raise ConfigError(
            f"{where}: the header's session id {record.session_id!r} is not a safe file name; "
            "the log was edited or damaged"
        )
    task = record.header.get("task")
    name = task.get("name") if isinstance(task, Mapping) else None
    parts = str(name).replace("\\", "/").split("/") if isinstance(name, str) else []
    if (
        not isinstance(name, str)
        or not name.strip()
        or not name.isprintable()
        or "\0" in name
        or name.startswith(("/", "\\"))
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise ConfigError(
            f"{where}: the header's task name {name!r} cannot be used as a file name under "
            "--out; the log was edited or damaged"
        )


def resumed_task(
    record: SessionRecord,
    located: Located,
    settings: Settings,
    *,
    params: Mapping[str, str],
    from_log: bool,
    workdir: Path | None,
    say: Say,
) -> Task:
    """The task to resume `record` with: from its task file in this checkout, or (only with
    `from_log`) from the header. Raises ConfigError (exit 2) when neither may be used."""
    name = str(record.header["task"]["name"])
    if located.task_file is None or not located.task_file.is_file():
        beside = prompt_task_file(record)
        if beside is not None:
            located = replace(located, task_file=beside)
    task = _from_task_file(record, located, settings, params, name, say)
    if task is None:
        if not from_log:
            if located.task_file is None:
                why = "the log does not say where its task file is in the checkout"
            elif located.task_file.is_file():
                why = f"its task file {located.task_file} no longer has task {name!r}"
            else:
                why = f"its task file {located.task_file} does not exist in this checkout"
            raise ConfigError(
                f"{record.path}: cannot resume task {name!r}: {why} ({located.root}). Run "
                "resume in the checkout that holds it, or pass --from-log to run the task as the "
                "log recorded it (its success check, extension commands and servers then run as "
                "written in the log)"
            )
        task = _from_log(record, located, workdir, say)
    elif workdir is not None:
        task = _with_workdir(task, workdir)
    return task


def prompt_task_file(record: SessionRecord) -> Path | None:
    """The task file of a `run -p` session in the artifacts folder that holds its log
    (`<out>/tasks/<name>.yaml` beside `<out>/sessions/`), or None.

    `run -p` writes its task file under `--out`; with an `--out` outside the checkout it is not
    in the checkout where resume runs, but it is beside the log being resumed."""
    task = record.header.get("task")
    recorded = record.header.get("task_file")
    if not isinstance(task, Mapping) or task.get("description") != PROMPT_TASK_DESCRIPTION:
        return None
    if not isinstance(recorded, str) or PurePath(recorded).parent.name != "tasks":
        return None
    name = PurePath(recorded).name
    if not _SAFE_ID.fullmatch(name):
        return None
    for folder in record.path.resolve().parents[:3]:
        candidate = folder / "tasks" / name
        if candidate.is_file():
            return candidate
    return None


def _from_task_file(
    record: SessionRecord,
    located: Located,
    settings: Settings,
    params: Mapping[str, str],
    name: str,
    say: Say,
) -> Task | None:
    path = located.task_file
    if path is None or not path.is_file():
        return None
    # Extensions and `${VAR}` resolve again from this environment, exactly as `run` does.
    tasks = load_tasks(
        [path],
        params=params,
        config_extensions=settings.extensions,
        env=environ(),
        config_agents=settings.agents,
    )
    for task in tasks:
        if task.name == name:
            _warn_on_drift(record, located, task, settings, say)
            return task
    return None


def _comparable(task: Mapping[str, Any]) -> dict[str, Any]:
    """A task record without what differs between machines (absolute paths, the interpreter)."""
    data = {k: v for k, v in task.items() if k not in ("file", "workdir")}
    extensions = dict(data.get("extensions") or {})
    if isinstance(extensions.get(WORKSPACE), Mapping):
        extensions[WORKSPACE] = {
            k: v for k, v in extensions[WORKSPACE].items() if k not in ("cmd", "args")
        }
    data["extensions"] = extensions
    return data


def _warn_on_drift(
    record: SessionRecord, located: Located, task: Task, settings: Settings, say: Say
) -> None:
    redactor = Redactor([*settings.secret_values(), *task.secrets])
    now = _comparable(json.loads(json.dumps(redactor.data(task.record()))))
    before = _comparable(record.header.get("task") or {})
    # A field added since the log was written, at its default, is no drift.
    defaults = TaskSpec(prompt="-").model_dump(mode="json")
    changed = sorted(
        k
        for k in set(now) | set(before)
        if now.get(k) != before.get(k) and (k in before or now.get(k) != defaults.get(k, ...))
    )
    if located.workdir_problem:
        changed.append("workdir (the log's lies outside this checkout; the log was edited?)")
    elif located.workdir is not None and located.workdir != task.workdir:
        changed.append(f"workdir (the log had {located.workdir}, the file says {task.workdir})")
    if "params" in changed:
        changed[changed.index("params")] = "params (pass --param KEY=VALUE to set them)"
    if changed:
        say(
            f"warning: {record.path}: task {task.name!r} drifted since the session: "
            f"{', '.join(changed)}; resuming with the task file as it is now"
        )


def check_task_changes(record: SessionRecord, task: Task, settings: Settings, accept: bool) -> None:
    """Refuse (exit 2) to resume a task whose executable parts (DESIGN 24: extensions, hooks,
    success, sandbox, permissions, tools, agents, skills) differ from the session's, unless
    `accept`. The config file's MCP servers, hooks, agents and sandbox count as one more part,
    `config`. A log from before `task_hashes` is not checked (its drift is only warned about),
    nor is `config` in a log from before it was hashed."""
    recorded = record.header.get("task_hashes")
    if not isinstance(recorded, Mapping):
        return
    redactor = Redactor([*settings.secret_values(), *task.secrets])
    now = task_hashes(task, redactor.data, settings)
    parts = [*EXECUTABLE_PARTS, *([CONFIG_PART] if CONFIG_PART in recorded else [])]
    changed = [part for part in parts if recorded.get(part) != now[part]]
    if changed and not accept:
        where = f"{task.file}" + (" or the config file" if CONFIG_PART in changed else "")
        raise ConfigError(
            f"{record.path}: cannot resume task {task.name!r}: its {', '.join(changed)} "
            f"changed since the session (in {where}). They decide what runs (MCP servers, "
            "hooks, the success check, the sandbox, what the agent may call), outside the "
            "agent's reach only if nobody but you changed them: review the task file, then pass "
            "--accept-task-changes to resume with it as it is now (or the same --allow-tool and "
            "--deny-tool flags as the run, when those are the difference)"
        )


def _with_workdir(task: Task, workdir: Path) -> Task:
    """The task with its tools rooted at `--workdir` instead of the task file's workdir."""
    extensions = dict(task.extensions)
    current = extensions.get(WORKSPACE)
    if current is not None and builtin_workspace_root(current) is not None:
        extensions[WORKSPACE] = workspace_extension(workdir).model_copy(
            update={"enabled": current.enabled}
        )
    return Task(**{**task.__dict__, "workdir": workdir, "extensions": extensions})


def _from_log(record: SessionRecord, located: Located, workdir: Path | None, say: Say) -> Task:
    recorded: dict[str, Any] = dict(record.header.get("task") or {})
    chosen = workdir or located.workdir
    if chosen is None and located.workdir_problem:
        raise ConfigError(f"{located.workdir_problem} (pass --workdir DIR to choose one)")
    if chosen is None or not chosen.is_dir():
        raise ConfigError(
            f"{record.path}: --from-log: the log's workdir "
            f"{chosen or '(not recorded)'} does not exist in this checkout ({located.root}); "
            "pass --workdir DIR"
        )
    fields = {k: v for k, v in recorded.items() if k in TaskSpec.model_fields}
    fields["extensions"] = {}
    try:
        spec = TaskSpec.model_validate(fields)
    except ValidationError as exc:
        raise ConfigError(
            f"{record.path}:1: the header's task is not a valid task: {exc}"
        ) from None
    extensions = {WORKSPACE: workspace_extension(chosen)}
    for key, ext in (recorded.get("extensions") or {}).items():
        if key == WORKSPACE:
            extensions[key] = extensions[key].model_copy(
                update={"enabled": bool(ext.get("enabled", True))}
            )
        elif MASK in json.dumps([ext.get("envs"), ext.get("headers")]):
            say(
                f"warning: {record.path}: extension {key!r} needs values the log masked; "
                "skipped (restore the task file to resolve it from this environment)"
            )
        else:
            try:
                extensions[key] = ExtensionConfig.model_validate(ext)
            except ValidationError as exc:
                raise ConfigError(
                    f"{record.path}:1: the header's extension {key!r} is not valid: {exc}"
                ) from None
    commands = [
        f"{key} (`{' '.join([ext.cmd, *ext.args]) if ext.cmd else ext.type}`)"
        for key, ext in extensions.items()
        if key != WORKSPACE
    ]
    say(
        f"--from-log: {record.path}: running task {spec.name!r} as the log recorded it, not "
        f"from a task file: its success check `{spec.success.check or 'none'}` and its MCP "
        f"servers {', '.join(commands) or 'none'} run as written in the log"
    )
    return Task(
        name=spec.name,
        file=located.task_file or record.path,
        line=1,
        spec=spec,
        workdir=chosen.resolve(),
        prompt_dirs=(),
        extensions=extensions,
        params={str(k): str(v) for k, v in (recorded.get("params") or {}).items()},
    )
