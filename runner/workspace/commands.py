"""Commands and searches of the workspace server: execute_command and search_files."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from runner.settings import WorkspaceLimits
from runner.workspace.output import MAX_OUTPUT_CHARS, OutputSink
from runner.workspace.paths import Confinement, WorkspaceError
from runner.workspace.sandbox import open_shell, read_pipe, run_to_end
from runner.workspace.search import MAX_SEARCH_MATCHES, search_files

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_OUTPUT_CHARS",
    "MAX_SEARCH_MATCHES",
    "MAX_TIMEOUT_S",
    "Commands",
    "GroupWatcher",
    "blocked_reason",
]

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 1800.0

_SYSTEM_DIRS = r"/(?:etc|usr|bin|sbin|boot|lib|lib64)(?:/|\b)"
_BLOCKED: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "deletes the filesystem root",
        re.compile(r"\brm\s+(?:-\S+\s+)*-\S*[rRf]\S*\s+(?:-\S+\s+)*(?:/|/\*)(?:\s|$|;|&|\|)"),
    ),
    ("deletes the filesystem root", re.compile(r"--no-preserve-root")),
    ("formats a filesystem", re.compile(r"\bmkfs(?:\.\w+)?\b")),
    ("is a fork bomb", re.compile(r"(\w+|:)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&")),
    ("writes to a system folder", re.compile(rf">>?\s*['\"]?{_SYSTEM_DIRS}")),
    ("writes to a system folder", re.compile(rf"\btee\s+(?:-\S+\s+)*['\"]?{_SYSTEM_DIRS}")),
    ("writes to a system folder", re.compile(rf"\bof={_SYSTEM_DIRS}")),
    ("writes to a raw disk", re.compile(r"(?:>|\bof=)\s*/dev/(?:sd|hd|nvme|vd|xvd|mmcblk)")),
    (
        "writes to a system folder",
        re.compile(
            rf"\b(?:cp|mv|rm|rmdir|ln|install|touch|chmod|chown|chgrp|truncate|mkdir|"
            rf"rsync|sed\s+-i\S*|unlink|shred)\b[^;&|\n]*\s['\"]?{_SYSTEM_DIRS}"
        ),
    ),
)


def blocked_reason(command: str) -> str | None:
    """Why a command is refused whatever the tool policy says, or None when it may run."""
    for reason, pattern in _BLOCKED:
        if pattern.search(command):
            return reason
    return None


class GroupWatcher(Protocol):
    """Told about each command's process group while it runs, and the folder of the outputs
    (`runner.workspace.sandbox.reaper.Reaper`)."""

    def watch(self, pgid: int) -> None: ...

    def forget(self, pgid: int) -> None: ...

    def watch_folder(self, folder: Path) -> None: ...


class Commands:
    """execute_command and search_files, confined to the root.

    `env` is the commands' whole environment (None: this process's); `watcher`, when given, is
    told about each command's process group from its start until it has been killed; `limits`
    caps what is kept of an output and which files a search reads.
    """

    def __init__(
        self,
        paths: Confinement,
        output_dir: Path,
        *,
        env: Mapping[str, str] | None = None,
        watcher: GroupWatcher | None = None,
        limits: WorkspaceLimits | None = None,
    ) -> None:
        self.paths = paths
        self.output_dir = output_dir
        self.limits = limits or WorkspaceLimits()
        self._env = dict(env) if env is not None else None
        self._watcher = watcher

    async def execute(self, command: str, timeout_s: float | None = None) -> str:
        """Run a shell command in the root; return its exit code and (capped) output."""
        if not command.strip():
            raise WorkspaceError("the command is empty")
        if reason := blocked_reason(command):
            raise WorkspaceError(
                f"refused: the command {reason}; this is blocked for every task, whatever the "
                "tool policy says"
            )
        timeout = min(max(timeout_s or DEFAULT_TIMEOUT_S, 1.0), MAX_TIMEOUT_S)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if self._watcher is not None:  # a SIGKILLed runner leaves no unmasked output behind
            self._watcher.watch_folder(self.output_dir)
        fd, name = tempfile.mkstemp(prefix="command-", suffix=".log", dir=self.output_dir)
        sink = OutputSink(os.fdopen(fd, "wb"), Path(name), self.limits.command_output_max_bytes)
        try:
            code, timed_out = await self._run(command, sink, timeout)
        finally:
            sink.close()
        status = (
            f"timed out after {timeout:g} s; the command and its child processes were killed"
            if timed_out
            else f"exit code {code}"
        )
        return f"{status}\n{sink.text()}"

    async def _run(self, command: str, sink: OutputSink, timeout: float) -> tuple[int | None, bool]:
        process = await open_shell(
            command,
            cwd=self.paths.root,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            watcher=self._watcher,
        )
        # Background children left by the command are killed too: nothing outlives a call.
        timed_out = await run_to_end(
            process,
            functools.partial(read_pipe, process.stdout, sink.write),
            timeout_s=timeout,
            watcher=self._watcher,
        )
        return process.returncode, timed_out

    async def search(self, path: str, regex: str, file_pattern: str | None = None) -> str:
        """Lines matching `regex` under `path`, with a line of context, bounded."""
        return await search_files(
            self.paths, path, regex, file_pattern, self.limits.search_file_max_bytes
        )
