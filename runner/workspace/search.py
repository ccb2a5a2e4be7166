"""search_files: ripgrep when it is installed, else a Python search; always in a child process.

A regular expression can take exponential time on an ordinary line (`^(\\w+\\s?)+$`), and Python's
`re` holds the GIL while it matches: run in the runner, it froze every task and SIGTERM with it. So
the search always runs in a process of its own, killed when the call is cancelled (the tool
timeout, the task's end, a signal): `rg` (a regex engine without backtracking) when it is on PATH,
else `python -m runner.workspace.search_worker`.

Both print ripgrep's JSON lines (`rg --json`), which this module reads as they come, stopping the
child once it has `MAX_SEARCH_MATCHES` matches, and formats the same way whichever backend ran:
`path:N:text` for a match, `path-N-text` for a line of context, `--` between groups. Files that are
.gitignore'd, in `.git`, binary (a NUL byte), over the size limit, symlinks, not regular, or
hard-linked are skipped by both.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import Process

from runner.workspace.fs import open_beneath
from runner.workspace.paths import Confinement, WorkspaceError

__all__ = ["MAX_LINE_SHOWN", "MAX_SEARCH_MATCHES", "Backend", "search_files"]

MAX_SEARCH_MATCHES = 200
"""Matches shown at most; the search stops there."""
MAX_LINE_SHOWN = 500
"""Characters of a line shown; the rest is cut."""
_MAX_JSON_LINE = 8 << 20
"""A longer line from the child ends the search (a 1 MB file's line encodes to less)."""

Backend = Literal["rg", "python"]


@dataclass
class _File:
    path: str
    lines: list[tuple[int, str, bool]] = field(default_factory=list)
    """(line number, text, is a match), in order."""


async def search_files(
    paths: Confinement,
    path: str,
    regex: str,
    file_pattern: str | None,
    max_file_bytes: int,
    backend: Backend | None = None,
) -> str:
    """The formatted matches of `regex` under `path` (a folder or one file)."""
    real = paths.resolve(path)
    try:
        re.compile(regex)
    except re.error as exc:
        raise WorkspaceError(f"invalid regex {regex!r}: {exc}") from None
    except RecursionError:
        raise WorkspaceError(f"invalid regex {regex!r}: it is nested too deeply") from None
    rel = paths.relative(real)
    target = "." if rel == "." else rel
    if not _searchable(real, max_file_bytes):
        return (
            f"No matches for {regex!r} in {rel} (only regular text files of at most "
            f"{max_file_bytes} bytes, with one link, are searched)"
        )
    rg = shutil.which("rg") if backend in (None, "rg") else None
    if backend == "rg" and rg is None:
        raise WorkspaceError("ripgrep (rg) is not installed")
    if rg is not None:
        args = [rg, *_rg_args(max_file_bytes, file_pattern), "-e", regex, "--", target]
        request = b""
    else:
        args = [sys.executable, "-I", str(_WORKER)]
        request = json.dumps(
            {"target": target, "regex": regex, "glob": file_pattern, "max_bytes": max_file_bytes}
        ).encode("utf-8")
    files, capped = await _collect(args, request, paths.root)
    files = _confirmed(paths.root, files, max_file_bytes)
    if not files:
        return f"No matches for {regex!r} in {rel}"
    return _format(files, capped)


def _searchable(real: Path, max_file_bytes: int) -> bool:
    """A folder, or a regular file with one link and at most `max_file_bytes`."""
    try:
        info = real.lstat()
    except OSError:
        return False
    if stat.S_ISDIR(info.st_mode):
        return True
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_size <= max_file_bytes


def _confirmed(root: Path, files: list[_File], max_file_bytes: int) -> list[_File]:
    """The lines the search reported that the file, opened beneath the root, really has.

    rg opens files by name: a folder swapped for a symlink to outside the root while it runs
    would show a file outside. Each file is read again beneath the root
    (runner.workspace.fs.beneath) and a line is kept only when it is there, at that number: what
    the model sees lies inside.
    """
    kept: list[_File] = []
    for file in files:
        lines = _lines_beneath(root, file.path, max_file_bytes)
        confirmed = [
            (n, text, hit)
            for n, text, hit in file.lines
            if lines is not None and 0 < n <= len(lines) and lines[n - 1] == text
        ]
        if any(hit for _, _, hit in confirmed):
            kept.append(_File(file.path, confirmed))
    return kept


def _lines_beneath(root: Path, rel: str, max_file_bytes: int) -> list[str] | None:
    """The lines of a regular file with one link, at most `max_file_bytes`, or None."""
    try:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW
        fd = open_beneath(root, rel, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        if info.st_size > max_file_bytes:
            return None
        data = os.read(fd, max_file_bytes + 1)
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    return [line.removesuffix("\r") for line in text.split("\n")]


def _rg_args(max_file_bytes: int, file_pattern: str | None) -> list[str]:
    # The Python backend's rules: every .gitignore from the repository's root down (even outside
    # a git repository, from the root down), the repository's .git/info/exclude, no other ignore
    # files, hidden files searched, .git never, symlinks not followed.
    args = ["--json", "--no-config", "--context", "1", "--sort", "path", "--hidden"]
    args += ["--no-require-git", "--no-ignore-dot", "--no-ignore-global"]
    args += ["--max-filesize", str(max_file_bytes), "--glob", "!.git"]
    if file_pattern and "/" not in file_pattern:
        # A type, not --glob: a glob would override .gitignore, which the pattern must not.
        args += ["--type-add", f"pattern:{file_pattern}", "--type", "pattern"]
    elif file_pattern:
        args += ["--glob", file_pattern]
    return args


_WORKER = Path(__file__).with_name("search_worker.py")
"""Run as a script under `-I`: neither the workdir nor PYTHONPATH is on its sys.path, so a
repository's own modules cannot stand in for the ones it imports."""


async def _collect(args: list[str], request: bytes, cwd: Path) -> tuple[list[_File], bool]:
    """The files with matches, in order, and whether the search stopped at the cap."""
    # stderr goes to a file: a pipe nobody reads while stdout is read could fill and stall rg.
    with tempfile.TemporaryFile() as errors:
        process = await anyio.open_process(
            args,
            stdin=subprocess.PIPE if request else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            cwd=cwd,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        try:
            files, capped = await _read(process, request)
            await process.wait()
            if process.returncode not in (0, 1) and not capped:
                errors.seek(0)
                message = errors.read(4096).decode("utf-8", errors="replace")
                raise WorkspaceError(f"search failed: {message.strip()}")
            return files, capped
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.aclose()


async def _read(process: Process, request: bytes) -> tuple[list[_File], bool]:
    files: list[_File] = []
    current: _File | None = None
    matches = 0
    if process.stdin is not None:
        await process.stdin.send(request)
        await process.stdin.aclose()
    async for message in _json_lines(process):
        kind, data = message.get("type"), message.get("data", {})
        if kind == "begin":
            current = _File(_text(data["path"]).removeprefix("./"))
        elif kind in ("match", "context") and current is not None:
            is_match = kind == "match"
            if is_match and matches == MAX_SEARCH_MATCHES:
                _keep(files, current)
                process.kill()
                return files, True
            matches += is_match
            text = _text(data["lines"]).rstrip("\n").removesuffix("\r")
            current.lines.append((data["line_number"], text, is_match))
        elif kind == "end" and current is not None:
            if data.get("binary_offset") is None:
                _keep(files, current)
            current = None
    return files, False


def _keep(files: list[_File], file: _File) -> None:
    if any(is_match for _, _, is_match in file.lines):
        files.append(file)


async def _json_lines(process: Process) -> AsyncIterator[dict[str, Any]]:
    assert process.stdout is not None
    buffer = b""
    async for chunk in process.stdout:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line:
                yield json.loads(line)
        if len(buffer) > _MAX_JSON_LINE:
            return


def _text(value: dict[str, str]) -> str:
    """rg's `{"text": ...}`, or `{"bytes": base64}` for bytes that are not UTF-8."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", errors="replace")


def _format(files: list[_File], capped: bool) -> str:
    out: list[str] = []
    for file in files:
        previous = None
        for number, text, is_match in file.lines:
            if out and (previous is None or number > previous + 1):
                out.append("--")
            sep = ":" if is_match else "-"
            shown = text if len(text) <= MAX_LINE_SHOWN else text[:MAX_LINE_SHOWN] + "..."
            out.append(f"{file.path}{sep}{number}{sep}{shown}")
            previous = number
    if capped:
        out.append(f"(stopped at {MAX_SEARCH_MATCHES} matches; narrow the path or the regex)")
    return "\n".join(out)
