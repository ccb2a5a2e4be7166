"""The sandbox of one task (DESIGN 15): its settings, the backend the run found, the record.

`task_sandbox` wraps a task: it merges the config's `sandbox:` with the task's own and the
`--sandbox` mode, asks the probe (once per run) for a backend, and makes the task's commands run
confined (`runner.workspace.confine`) with a private HOME and TMPDIR, removed at the end. It never
raises: what stops the task (`required` without a backend, a bad `writable` folder of the config)
is `TaskSandbox.error`, which the session raises before the model is called, so that the failure
is an outcome with a log. `auto` without a backend warns once per run on the console; each task's
log and JUnit say `degraded`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from runner.errors import ConfigError, RunnerError, SandboxUnavailable
from runner.mcp import WORKSPACE, server_env
from runner.outcome import SandboxRecord
from runner.run.guard.leftovers import Leftovers, prepare
from runner.run.guard.network import TaskProxy, allowlist, unheld_allowlist, with_allowlist
from runner.settings import SandboxSettings, Settings, environ
from runner.task import Task, writable_problems
from runner.workspace import (
    PROPERTIES,
    Probe,
    Sandbox,
    confine,
    git_dirs,
    masked_roots,
    probe,
    shared_reaper,
    toolchain_dirs,
)

__all__ = ["TaskSandbox", "command_env", "sandbox_settings", "task_sandbox"]

_warned: list[str] = []
"""The reasons already warned about on the console in this run (a run is one process)."""


@dataclass(frozen=True)
class TaskSandbox:
    """A task's sandbox as the session sees it."""

    record: SandboxRecord
    error: RunnerError | None = None
    """Why the task must not run (raised by the session before the model is called)."""
    proxy: TaskProxy | None = None
    """The network allowlist's proxy (DESIGN 19), when the task has one."""
    leftovers: Leftovers | None = None
    """The git folder and `--out` as held and recorded (DESIGN 24)."""

    def left_behind(self) -> str:
        """At the task's end: what it changed that it may not leave behind (now restored), in
        words; "" when nothing."""
        return self.leftovers.finish() if self.leftovers is not None else ""

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values to mask in the task's artifacts: the proxy's credential (commands can print
        their proxy variables)."""
        return (self.proxy.path.secret,) if self.proxy is not None else ()

    def final(self) -> SandboxRecord:
        """The record with the proxy's connection counts, once the task has ended."""
        if self.proxy is None:
            return self.record
        return replace(self.record, connections=self.proxy.counts())


def sandbox_settings(task: Task, settings: Settings) -> SandboxSettings:
    """The config's `sandbox:`, the task's own keys over it, `--sandbox MODE` over both."""
    merged = settings.sandbox.model_dump(exclude_unset=True)
    merged.update(task.spec.sandbox.model_dump(exclude_unset=True))
    if settings.sandbox_mode is not None:
        merged["mode"] = settings.sandbox_mode
    return SandboxSettings.model_validate(merged)


def command_env(task: Task, env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a hook or the success check: the minimal one execute_command gets
    (the workspace's `envs` included), plus the variables the task names under `check_env:`."""
    workspace = task.extensions.get(WORKSPACE)
    minimal = server_env(env, workspace.envs if workspace is not None else {})
    minimal.update({name: env[name] for name in task.spec.check_env if name in env})
    return minimal


def _enforced_record(
    found: Probe, backend: str, spec: SandboxSettings, hosts: bool
) -> SandboxRecord:
    """What a working backend holds for the task, and what it cannot (each with its reason)."""
    on = spec.network is True
    missing = tuple((n, why) for n, why in found.missing if not (n == "net" and on))
    if hosts and backend != "bwrap":  # named with the rest, so `required` names it too
        missing += (("net-allowlist", unheld_allowlist()),)
    return SandboxRecord(
        "enforced",
        backend,
        reason="; ".join(f"{name}: {why}" for name, why in missing),
        network=on,
        writable=spec.writable,
        enforced=tuple(n for n in found.held if not (n == "net" and on)),
        missing=tuple(name for name, _ in missing),
    )


@contextlib.asynccontextmanager
async def task_sandbox(
    task: Task, settings: Settings, say: Callable[[str], None], out_dir: Path | None = None
) -> AsyncIterator[TaskSandbox]:
    """Confine the body's commands as the task's settings ask; yields what was enforced."""
    spec = sandbox_settings(task, settings)
    hosts = allowlist(spec, settings)
    if spec.mode == "off":
        async with with_allowlist(hosts, SandboxRecord("off", network=True), None, False) as got:
            yield TaskSandbox(got[0], proxy=got[2])
        return
    writable, problem = _writable(spec, task, settings)
    if problem is not None:
        yield TaskSandbox(SandboxRecord("unavailable", reason=problem), ConfigError(problem))
        return
    found = await anyio.to_thread.run_sync(probe, settings.sandbox_backend)
    if found.backend is None:
        reason = f"no sandbox backend works on this host: {found.reason}"
        if spec.mode == "required":
            error = SandboxUnavailable(
                f"sandbox mode is required, but {reason}; see docs/sandbox.md"
            )
            yield TaskSandbox(SandboxRecord("unavailable", reason=found.reason), error)
            return
        if reason not in _warned:
            _warned.append(reason)
            say(f"warning: {reason}; commands run unconfined (sandbox mode auto)")
        # Nothing holds: every property the task asked for is missing (`net` unless network on).
        absent = tuple(n for n in PROPERTIES if n != "net" or spec.network is not True)
        record = SandboxRecord("degraded", reason=found.reason, network=True, missing=absent)
        left = prepare(task.workdir, (), "", writable_git=spec.git == "writable", out_dir=out_dir)
        async with with_allowlist(hosts, left.stamp(record), None, False) as got:
            yield TaskSandbox(got[0], proxy=got[2], leftovers=left)
        return
    on = spec.network is True
    record = _enforced_record(found, found.backend, spec, bool(hosts))
    if record.missing:
        names = ", ".join(record.missing)
        what = f"the {found.backend} sandbox does not confine {names} here ({record.reason})"
        if spec.mode == "required":
            error = SandboxUnavailable(f"sandbox mode is required, but {what}; see docs/sandbox.md")
            yield TaskSandbox(dataclasses.replace(record, status="unavailable"), error)
            return
        _warn_once(say, what, "commands run with what it does confine (sandbox mode auto)")
    with _scratch() as scratch:
        home = Path.home().resolve()
        path = environ().get("PATH", "")
        rw = (scratch, task.workdir, *writable)
        git_writable = spec.git == "writable"
        left = prepare(task.workdir, rw, found.backend, writable_git=git_writable, out_dir=out_dir)
        sandbox = Sandbox(
            found.backend,
            found.executable,
            task.workdir,
            scratch,
            network=on,
            writable=writable,
            hidden=(home,) if home.is_dir() and home != Path("/") else (),
            readable=(
                *(_project(task) if found.backend == "bwrap" else ()),
                *git_dirs(task.workdir),
                *toolchain_dirs(home, path),
                *(folder for root in masked_roots() for folder in toolchain_dirs(root, path)),
            ),
            locked=left.locked,
            pinned=left.pinned,
        )
        required = spec.mode == "required"
        async with with_allowlist(hosts, record, sandbox, required) as got:
            if hosts and not got[0].allowlist_enforced and got[3] is None:
                _warn_once(
                    say,
                    f"the {found.backend} sandbox does not hold net-allowlist "
                    f"({unheld_allowlist()})",
                    "the network allowlist filters only programs that use the proxy",
                )
            with confine(got[1]):
                await left.trial(task.workdir)
                if left.problems:
                    what = f"the read-only binds did not hold ({'; '.join(left.problems)})"
                    _warn_once(say, what, "the runner checks and restores them instead")
                yield TaskSandbox(left.stamp(got[0]), got[3], got[2], left)


def _warn_once(say: Callable[[str], None], reason: str, effect: str) -> None:
    if reason not in _warned:
        _warned.append(reason)
        say(f"warning: {reason}; {effect}")


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """The task's private HOME and TMPDIR; the reaper removes them if the runner is killed
    (`kill -9`) before it does."""
    scratch = Path(tempfile.mkdtemp(prefix="agent-runner-sandbox-")).resolve()
    reaper = shared_reaper()
    reaper.watch_folder(scratch)
    try:
        (scratch / "home").mkdir()
        (scratch / "tmp").mkdir()
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        reaper.forget_folder(scratch)


def _project(task: Task) -> tuple[Path, ...]:
    """What commands read of the task's project beside the workdir (a hook `../hooks/guard.sh`,
    a check's script next to the task file), where it lies under a folder bubblewrap masks
    (`/tmp`): the folder that holds both the task file and the workdir, else each of them.
    (Landlock masks nothing, and its read rules would reopen a hidden HOME inside.)"""
    folders = (task.file.parent.resolve(), task.workdir)
    common = Path(os.path.commonpath([str(folder) for folder in folders]))
    masked = masked_roots()
    if common in masked or not any(common.is_relative_to(root) for root in masked):
        candidates: tuple[Path, ...] = folders
    else:
        candidates = (common,)
    return tuple(
        folder
        for folder in candidates
        if folder not in masked and any(folder.is_relative_to(root) for root in masked)
    )


def _writable(
    spec: SandboxSettings, task: Task, settings: Settings
) -> tuple[tuple[Path, ...], str | None]:
    """The writable folders, resolved; or the first problem with one (from the config file:
    the task's own were checked when it was loaded)."""
    problems = writable_problems(spec.writable, task.workdir, _repository_of(task.workdir))
    if problems:
        index, message, hint = problems[0]
        where = settings.where("sandbox", "writable", index)
        return (), f"{where}: sandbox.writable: {message} ({hint})"
    return tuple((task.workdir / entry).resolve() for entry in spec.writable), None


def _repository_of(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
