"""`success.require` (DESIGN 12): what must have happened for a reported success to count.

- `min_tool_calls: N`: at least N tool calls the policy let through (attempt_completion aside).
- `no_denied_calls: true`: no tool call refused by the tool policy.
- `changed_files: true`: the workdir's git state differs at completion from the task's start.
  The state is `git status` of the workdir (untracked files included, ignored ones not), the
  content of every file it lists, and HEAD, so an edit to a file that was already modified, or a
  commit, counts as a change too. The loader refuses `changed_files` outside a git repository
  (exit 2). On resume the baseline is the resumed session's start.

git runs with a minimal environment (no API keys, no secrets) and `core.fsmonitor` off: the
agent can write `.git/config`, and whatever git runs from there must learn nothing the agent's
own commands could not.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.run.turn import Budget
from runner.task import Require

__all__ = ["GitState", "git_state", "requirement_problem"]

GIT_TIMEOUT_S = 60.0
_OUTPUT_LIMIT = 8 * 1024 * 1024
"""Bytes of `git status` output read; a listing past this is compared by what was read."""
_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")


@dataclass(frozen=True)
class GitState:
    """A fingerprint of the workdir's git state, or why it could not be taken."""

    digest: str = ""
    error: str = ""


async def git_state(workdir: Path, env: Mapping[str, str]) -> GitState:
    """Fingerprint `git status` of `workdir`, the listed files' content, and HEAD."""
    quiet = {k: env[k] for k in _ENV_KEEP if k in env}
    quiet.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    status = await _git(
        workdir,
        quiet,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--",
        ".",
    )
    if isinstance(status, str):
        return GitState(error=status)
    head = await _git(workdir, quiet, "rev-parse", "--verify", "-q", "HEAD")
    digest = hashlib.sha256(status)
    digest.update(head if isinstance(head, bytes) else b"(no HEAD)")
    top = await _git(workdir, quiet, "rev-parse", "--show-toplevel")
    root = Path(top.decode().strip()) if isinstance(top, bytes) else workdir
    for entry in status.split(b"\0"):
        if len(entry) > 3:
            digest.update(_content_digest(root / os.fsdecode(entry[3:])))
    return GitState(digest=digest.hexdigest())


def _content_digest(path: Path) -> bytes:
    """The file's content hash; a folder, a missing file or an unreadable one by what it is."""
    if path.is_symlink():
        with contextlib.suppress(OSError):
            return b"link:" + os.fsencode(path.readlink())
    if not path.is_file():
        return b"missing" if not path.exists() else b"other"
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError as error:
        return f"unreadable:{error.errno}".encode()
    return digest.digest()


async def _git(workdir: Path, env: Mapping[str, str], *args: str) -> bytes | str:
    """git's stdout, or its error as text."""
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            "-c",
            "core.fsmonitor=false",
            *args,
            cwd=workdir,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        return f"cannot run git: {error.strerror or error}"
    try:
        async with asyncio.timeout(GIT_TIMEOUT_S):
            out, err = await process.communicate()
    except TimeoutError:
        await _stop(process)
        return f"git {args[0]} took over {GIT_TIMEOUT_S:g}s"
    except asyncio.CancelledError:
        await _stop(process)
        raise
    if process.returncode != 0 and args[0] == "status":
        message = err.decode("utf-8", errors="replace").strip().splitlines()
        return f"git status failed: {message[-1] if message else process.returncode}"
    return out[:_OUTPUT_LIMIT] if process.returncode == 0 else f"exit {process.returncode}"


async def _stop(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def requirement_problem(
    require: Require, budget: Budget, before: GitState | None, after: GitState | None
) -> str | None:
    """Which requirement the task misses and why, or None when it meets them all."""
    allowed = budget.tool_calls - budget.denied_calls
    if require.min_tool_calls is not None and allowed < require.min_tool_calls:
        return (
            f"require.min_tool_calls: the agent made {allowed} tool call(s) that ran, "
            f"{require.min_tool_calls} required"
        )
    if require.no_denied_calls and budget.denied_calls:
        return (
            f"require.no_denied_calls: {budget.denied_calls} tool call(s) were refused by the "
            "tool policy"
        )
    if require.changed_files:
        for state in (before, after):
            if state is None or state.error:
                why = state.error if state else "no baseline was taken"
                return f"require.changed_files: cannot read the workdir's git state ({why})"
        assert before is not None and after is not None
        if before.digest == after.digest:
            return "require.changed_files: the workdir's git status did not change during the task"
    return None
