"""Commands and searches of the workspace server: execute_command and search_files."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import anyio

from runner.workspace.files import is_binary, walk
from runner.workspace.paths import Confinement, WorkspaceError
from runner.workspace.shell import open_shell

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
MAX_OUTPUT_CHARS = 20_000
"""Output execute_command returns; the rest is in the full-output file."""
MAX_SEARCH_MATCHES = 200
_SEARCH_FILE_BYTES = 1_000_000

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
    """Told about each command's process group while it runs (`runner.workspace.reaper.Reaper`)."""

    def watch(self, pgid: int) -> None: ...

    def forget(self, pgid: int) -> None: ...


class Commands:
    """execute_command and search_files, confined to the root.

    `env` is the commands' whole environment (None: this process's); `watcher`, when given, is
    told about each command's process group from its start until it has been killed.
    """

    def __init__(
        self,
        paths: Confinement,
        output_dir: Path,
        *,
        env: Mapping[str, str] | None = None,
        watcher: GroupWatcher | None = None,
    ) -> None:
        self.paths = paths
        self.output_dir = output_dir
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
        fd, name = tempfile.mkstemp(prefix="command-", suffix=".log", dir=self.output_dir)
        log = Path(name)
        with os.fdopen(fd, "wb") as out:
            code, timed_out = await self._run(command, out.fileno(), timeout)
        text = log.read_bytes().decode("utf-8", errors="replace")
        status = (
            f"timed out after {timeout:g} s; the command and its child processes were killed"
            if timed_out
            else f"exit code {code}"
        )
        return f"{status}\n{_capped(text, log)}"

    async def _run(self, command: str, out: int, timeout: float) -> tuple[int | None, bool]:
        process = await open_shell(
            command,
            cwd=self.paths.root,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        if self._watcher is not None:
            self._watcher.watch(process.pid)
        try:
            with anyio.move_on_after(timeout) as scope:
                await process.wait()
            return process.returncode, scope.cancelled_caught
        finally:
            # Background children left by the command are killed too: nothing outlives a call.
            _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                await process.wait()
            if self._watcher is not None:
                self._watcher.forget(process.pid)

    async def search(self, path: str, regex: str, file_pattern: str | None = None) -> str:
        """Lines matching `regex` under `path`, with a line of context, bounded."""
        real = self.paths.resolve(path)
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise WorkspaceError(f"invalid regex {regex!r}: {exc}") from None
        rg = shutil.which("rg")
        if rg:
            lines = await _ripgrep(rg, self.paths.root, real, regex, file_pattern, self._env)
        else:
            lines = await anyio.to_thread.run_sync(
                _python_search, self.paths, real, pattern, file_pattern
            )
        if not lines:
            return f"No matches for {regex!r} in {self.paths.relative(real)}"
        return "\n".join(lines)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _capped(text: str, log: Path) -> str:
    if not text:
        return "(no output)"
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    head, tail = text[: MAX_OUTPUT_CHARS // 4], text[-(MAX_OUTPUT_CHARS * 3 // 4) :]
    omitted = len(text) - len(head) - len(tail)
    return (
        f"{head}\n... [{omitted} characters omitted; the full output ({len(text)} characters) "
        f"is in {log}, readable with read_file] ...\n{tail}"
    )


async def _ripgrep(
    rg: str,
    root: Path,
    real: Path,
    regex: str,
    file_pattern: str | None,
    env: Mapping[str, str] | None,
) -> list[str]:
    args = [rg, "--line-number", "--no-heading", "--color", "never", "-C", "1"]
    args += ["--max-columns", "500", "--max-count", str(MAX_SEARCH_MATCHES)]
    if file_pattern:
        args += ["--glob", file_pattern]
    args += ["-e", regex]
    if real != root:  # without a path rg searches the cwd and prints paths without "./"
        args += ["--", str(real.relative_to(root))]
    result = await anyio.run_process(args, cwd=root, env=env, check=False)
    if result.returncode > 1:
        message = result.stderr.decode("utf-8", errors="replace").strip()
        raise WorkspaceError(f"search failed: {message}")
    lines = result.stdout.decode("utf-8", errors="replace").splitlines()
    return _bounded(lines, sum(1 for line in lines if re.match(r"^.+?:\d+:", line)))


def _python_search(
    paths: Confinement, real: Path, pattern: re.Pattern[str], file_pattern: str | None
) -> list[str]:
    files = [real] if real.is_file() else _files(paths.root, real, file_pattern)
    out: list[str] = []
    matches = 0
    for file in files:
        found, count = _search_file(paths, file, pattern)
        out.extend(found)
        matches += count
        if matches >= MAX_SEARCH_MATCHES:
            break
    return _bounded(out, matches)


def _files(root: Path, start: Path, file_pattern: str | None) -> list[Path]:
    names = (entry for entry in walk(root, start, recursive=True) if not entry.endswith("/"))
    return [
        root / name
        for name in names
        if file_pattern is None or Path(name).match(file_pattern) or Path(name).name == file_pattern
    ]


def _search_file(paths: Confinement, file: Path, pattern: re.Pattern[str]) -> tuple[list[str], int]:
    try:
        if file.is_symlink() or file.stat().st_size > _SEARCH_FILE_BYTES:
            return [], 0
        data = file.read_bytes()
    except OSError:
        return [], 0
    if is_binary(data):
        return [], 0
    lines = data.decode("utf-8").splitlines()
    rel = paths.relative(file)
    hits = [n for n, line in enumerate(lines) if pattern.search(line)]
    hit_set = set(hits)
    shown: list[str] = []
    last = -2
    for n in hits:
        for k in range(max(n - 1, last + 1), min(n + 2, len(lines))):
            if shown and k > last + 1:
                shown.append("--")
            sep = ":" if k in hit_set else "-"
            shown.append(f"{rel}{sep}{k + 1}{sep}{lines[k][:500]}")
            last = k
    if shown:
        shown.append("--")
    return shown, len(hits)


def _bounded(lines: list[str], matches: int) -> list[str]:
    if matches < MAX_SEARCH_MATCHES:
        return lines
    return [*lines, f"(stopped at {MAX_SEARCH_MATCHES} matches; narrow the path or the regex)"]
