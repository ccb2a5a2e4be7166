"""`isolation: worktree` (DESIGN 15): a task runs in a git worktree of its own; its change: a patch.

Before anything runs, `check_isolation` refuses (exit 2) a worktree task whose workdir is not in a
git repository with a commit, and two tasks that would share a workdir at once (`--jobs` > 1)
without isolation when either may write in it. `run_isolated` runs one task: a fresh worktree
(`runner.workspace.git.worktree`) stands in for the workdir everywhere (tools, the workspace
server, hooks, the success check), the change is written to `<out>/patches/<task>.patch` at the
end, whatever the outcome, and the worktree is removed unless `--keep-worktrees`. The session
log header's `checkout.isolation` records the commit and the patch, so that `resume` starts a
fresh worktree from that commit with the patch applied.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal, NoReturn

from runner.atomic import ARTIFACT_MODE
from runner.errors import ConfigError, ExitCode, RunnerError
from runner.mcp import WORKSPACE, builtin_workspace_root, policy_allows, workspace_extension
from runner.outcome import TaskOutcome
from runner.task import Task
from runner.toolcall import ToolSpec
from runner.workspace import (
    Worktree,
    checkout_record,
    create_worktree,
    remove_worktree,
    repository_of,
    task_diff,
)

__all__ = [
    "Isolation",
    "check_isolation",
    "checkout_of",
    "isolation_of",
    "parent_worktree",
    "patch_name",
    "run_in_isolation",
    "run_isolated",
    "write_reason",
]

Isolation = Literal["none", "worktree"]
_WRITE_TOOLS = ("write_to_file", "replace_in_file", "execute_command")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def isolation_of(
    task: Task, override: str | None, parent: Mapping[str, str] | None = None
) -> Isolation:
    """`--isolation`, else a resumed worktree session's, else the task's own."""
    if override in ("none", "worktree"):
        return override  # type: ignore[return-value]
    return "worktree" if parent else task.spec.isolation


def write_reason(task: Task) -> str | None:
    """Why the task may write in its workdir (a write tool or execute_command allowed, or an MCP
    server of its own whose tools may write), or None for a read-only task."""
    workspace = task.extensions.get(WORKSPACE)
    if workspace is not None and workspace.enabled:
        policy = task.spec.tools
        allowed = [
            n for n in _WRITE_TOOLS if policy_allows(policy, ToolSpec(n, "", server=WORKSPACE))
        ]
        if allowed:
            return f"allows {', '.join(allowed)}"
    others = sorted(n for n, ext in task.extensions.items() if n != WORKSPACE and ext.enabled)
    if others:
        return f"has MCP server(s) {', '.join(others)}, whose tools may write"
    return None


def check_isolation(
    tasks: Sequence[tuple[Task, Mapping[str, str] | None]],
    jobs: int,
    override: str | None,
    env: Mapping[str, str],
) -> None:
    """Refuse (ConfigError, exit 2) what `isolation` cannot run; `tasks` pairs each task with its
    resumed session's worktree record (or None)."""
    shared: list[Task] = []
    for task, parent in tasks:
        if isolation_of(task, override, parent) == "worktree":
            where = f"{task.file}:{task.line}: task {task.name!r}: "
            try:
                repository_of(task.workdir, env, parent["head"] if parent else None)
            except ConfigError as error:
                raise ConfigError(where + str(error)) from None
        else:
            shared.append(task)
    if jobs <= 1:
        return
    # Only a pair with a writer in it can clash, so each task's reason is worked out once and
    # only writers are compared with the others: a suite of read-only tasks stays linear (every
    # pair of 1,000 tasks, with two reasons each, cost a million policy checks).
    reasons = [write_reason(task) for task in shared]
    for index, reason in enumerate(reasons):
        if reason is None:
            continue
        for other, task in enumerate(shared):
            if other != index and _overlap(shared[index].workdir, task.workdir):
                one, two = sorted((index, other))
                _refuse_shared(shared[one], reasons[one], shared[two], reasons[two], jobs)


def _refuse_shared(
    first: Task, first_reason: str | None, second: Task, second_reason: str | None, jobs: int
) -> NoReturn:
    pair = ((first, first_reason), (second, second_reason))
    why = "; ".join(f"{task.name!r} {reason}" for task, reason in pair if reason is not None)
    raise ConfigError(
        f"tasks {first.name!r} ({first.file}:{first.line}) and {second.name!r} "
        f"({second.file}:{second.line}) share the workdir {second.workdir} under "
        f"--jobs {jobs}, and {why}: they would edit the same files at once. Set "
        "`isolation: worktree` (or pass --isolation worktree) to give each task its own "
        "git worktree, or run with --jobs 1"
    )


def _overlap(one: Path, two: Path) -> bool:
    return one.is_relative_to(two) or two.is_relative_to(one)


def patch_name(name: str) -> str:
    """The file name of a task's patch: its name with anything but `[A-Za-z0-9._-]` as `_`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") + ".patch"


def checkout_of(task: Task, cwd: Path) -> dict[str, Any]:
    """The session log header's `checkout` (runner.workspace.git.checkout), for a task in a
    worktree with the original workdir and `isolation`: {mode, head, snapshot (the starting
    state's commit), patch (relative to --out), worktree}."""
    facts = task.isolated
    record = checkout_record(task.file, Path(facts["workdir"]) if facts else task.workdir, cwd)
    if facts:
        kept = {k: v for k, v in facts.items() if k != "workdir"}
        record["isolation"] = {"mode": "worktree", **kept}
    return record


def parent_worktree(header: Mapping[str, Any], log: Path) -> dict[str, str] | None:
    """What a resumed worktree session starts from: `head`, `snapshot` (its starting state, ""
    in logs from before snapshots) and `patch` (absolute, "" when the session left no patch: it
    changed nothing). None for a session that ran in place.

    The header is untrusted: a commit that is not a hex id, or a patch path that is not
    `patches/<file>`, is refused (exit 2)."""
    checkout = header.get("checkout")
    record = checkout.get("isolation") if isinstance(checkout, Mapping) else None
    if not isinstance(record, Mapping) or record.get("mode") != "worktree":
        return None
    head, patch = str(record.get("head") or ""), str(record.get("patch") or "")
    snapshot = str(record.get("snapshot") or "")
    rel = PurePosixPath(patch)
    bad_snapshot = bool(snapshot) and not _COMMIT.fullmatch(snapshot)
    if not _COMMIT.fullmatch(head) or rel.parts[:1] != ("patches",) or len(rel.parts) != 2:
        raise ConfigError(
            f"{log}:1: the header's checkout.isolation {dict(record)!r} is not a commit and a "
            "patches/<file> path; the log was edited or damaged"
        )
    found = log.resolve().parent.parent / rel  # <out>/sessions/<id>.jsonl -> <out>/patches/...
    if bad_snapshot:
        raise ConfigError(
            f"{log}:1: the header's checkout.isolation.snapshot {snapshot!r} is not a commit id; "
            "the log was edited or damaged"
        )
    return {"head": head, "snapshot": snapshot, "patch": str(found) if found.is_file() else ""}


Run = Callable[[Task], Awaitable[TaskOutcome]]


async def run_in_isolation(
    task: Task,
    run: Run,
    *,
    override: str | None,
    keep: bool,
    out_dir: Path,
    env: Mapping[str, str],
    parent: Mapping[str, str] | None,
) -> TaskOutcome:
    """`run(task)` in place, or in a worktree when the task's isolation (or `--isolation`) says."""
    if isolation_of(task, override, parent) == "none":
        return await run(task)
    return await run_isolated(task, run, out_dir=out_dir, env=env, keep=keep, parent=parent)


async def run_isolated(
    task: Task,
    run: Run,
    *,
    out_dir: Path,
    env: Mapping[str, str],
    keep: bool,
    parent: Mapping[str, str] | None = None,
) -> TaskOutcome:
    """Run the task in a fresh worktree; the outcome names the patch (and the kept worktree)."""
    try:
        head = parent["head"] if parent else None
        repo = await asyncio.to_thread(repository_of, task.workdir, env, head)
        patch = Path(parent["patch"]) if parent and parent["patch"] else None
        tree = await create_worktree(
            repo,
            env,
            carry=parent is None,
            exclude=(out_dir.resolve(),),
            patch=patch,
            snapshot=parent.get("snapshot") if parent else None,
        )
    except RunnerError as error:
        return _failed(task, error)
    name = patch_name(task.label)  # a sample: `name__2_5_.patch`
    target = out_dir / "patches" / name
    facts = {
        "workdir": str(task.workdir),
        "head": repo.head,
        "snapshot": tree.snapshot,
        "patch": f"patches/{name}",
        "worktree": str(tree.path),
    }
    try:
        outcome = await run(_in_worktree(task, tree, facts))
    finally:
        written, problem = await _save_patch(tree, env, target)
        if keep:
            tree.shadow.close()  # the runner's git folder goes; the worktree stays
        else:
            await remove_worktree(tree, env)
    if problem:
        outcome = dataclasses.replace(
            outcome,
            status="error",
            kind="artifacts",
            reason=f"{outcome.reason}; the task's patch could not be written: {problem}",
            exit_code=ExitCode.INFRASTRUCTURE,
        )
    return dataclasses.replace(outcome, patch=written, worktree=tree.path if keep else None)


async def _save_patch(
    tree: Worktree, env: Mapping[str, str], target: Path
) -> tuple[Path | None, str]:
    """(the patch written, or None when the task changed nothing; what went wrong, or "")."""
    try:
        diff = await task_diff(tree, env)
        target.unlink(missing_ok=True)  # an earlier run's patch must not pass for this one's
        if not diff:
            return None, ""
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.tmp")
        partial.write_bytes(diff)  # bytes as git wrote them: file content need not be UTF-8
        partial.chmod(ARTIFACT_MODE)
        partial.replace(target)
    except (RunnerError, OSError) as error:
        return None, str(error)
    return target, ""


def _in_worktree(task: Task, tree: Worktree, facts: Mapping[str, str]) -> Task:
    """The task with the worktree as its workdir, its built-in workspace server's root too."""
    extensions = dict(task.extensions)
    current = extensions.get(WORKSPACE)
    if current is not None and builtin_workspace_root(current) == str(task.workdir):
        extensions[WORKSPACE] = workspace_extension(tree.workdir).model_copy(
            update={"enabled": current.enabled}
        )
    return dataclasses.replace(
        task, workdir=tree.workdir, extensions=extensions, isolated=dict(facts)
    )


def _failed(task: Task, error: RunnerError) -> TaskOutcome:
    return TaskOutcome(
        name=task.name,
        task_file=task.file,
        status="error",
        reason=f"cannot start the task's worktree: {error}",
        kind="config" if isinstance(error, ConfigError) else "worktree",
        exit_code=error.exit_code,
    )
