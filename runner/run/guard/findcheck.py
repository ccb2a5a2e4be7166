"""Checks of one `report_finding` call (DESIGN 21): the arguments come from the model, so each is
checked and bounded, and a refusal is an error text the model can act on.

The file must be a regular file inside the workdir (no symlink on the way, no binary), the lines
must exist, the severity must be known and the texts must fit their bounds. A title becomes one
line (annotations and SARIF rule names are one line); secrets are masked by the caller.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.outcome import SEVERITIES, Finding, Severity

__all__ = ["FindingLimits", "check_finding", "repository_root"]


class FindingLimits:
    """Bounds of one finding's parts (characters), and of a task's findings."""

    path = 1_000
    title = 200
    message = 8_000
    suggestion = 16_000
    lines = 1_000
    """Lines one finding may span."""
    file_bytes = 10_000_000
    """Larger files are not read to count their lines."""
    per_task = 200
    """Findings a task keeps; later calls are refused (the model is told to keep the worst)."""


_BINARY_PROBE = 8192
"""Bytes looked at for a NUL byte, as git does to call a file binary."""


def repository_root(workdir: Path) -> Path:
    """The git work tree holding `workdir` (a `.git` folder or file), else `workdir` itself:
    finding paths are relative to it, as code scanning and pull requests expect."""
    real = workdir.resolve()
    for folder in (real, *real.parents):
        if (folder / ".git").exists():
            return folder
    return real


def check_finding(arguments: Mapping[str, Any], workdir: Path, root: Path) -> Finding | str:
    """The finding `arguments` describe, or an error text saying what to fix."""
    severity = arguments.get("severity")
    if severity not in SEVERITIES:
        return f"Error: `severity` must be one of {', '.join(SEVERITIES)}, not {severity!r:.40}."
    texts = _texts(arguments)
    if isinstance(texts, str):
        return texts
    title, message, suggestion = texts
    located = _file_lines(arguments.get("path"), workdir)
    if isinstance(located, str):
        return located
    path, lines = located
    span = _span(arguments, len(lines))
    if isinstance(span, str):
        return span
    first, last = span
    relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    relative = _unicode(relative)  # a file name's undecodable bytes, escaped for the reports
    quoted = "\n".join(" ".join(line.split()) for line in lines[first - 1 : last])
    digest = hashlib.sha256(f"{title.lower()}\0{relative}\0{quoted}".encode()).hexdigest()
    sev: Severity = severity
    return Finding(relative, first, last, sev, title, message, suggestion, digest[:32])


def _texts(arguments: Mapping[str, Any]) -> tuple[str, str, str | None] | str:
    title, message = arguments.get("title"), arguments.get("message")
    suggestion = arguments.get("suggestion")
    if not isinstance(title, str) or not title.strip():
        return "Error: `title` is required: one short line naming the problem."
    if not isinstance(message, str) or not message.strip():
        return "Error: `message` is required: what is wrong and why."
    if suggestion is not None and not isinstance(suggestion, str):
        return "Error: `suggestion` must be text: the replacement for the lines."
    title = " ".join(title.split())  # one line: no line break reaches an annotation or rule name
    # A lone surrogate (JSON lets a model send "\\ud83d" alone) is no UTF-8: kept as its escape,
    # as the session log keeps it, so that no report or fingerprint has to cope with it.
    title, message = _unicode(title), _unicode(message)
    suggestion = None if suggestion is None else _unicode(suggestion)
    limits = FindingLimits
    for name, text, limit in (
        ("title", title, limits.title),
        ("message", message, limits.message),
        ("suggestion", suggestion or "", limits.suggestion),
    ):
        if len(text) > limit:
            return f"Error: `{name}` has {len(text)} characters; keep it under {limit}."
    return title, message.strip(), suggestion


def _unicode(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _file_lines(raw: Any, workdir: Path) -> tuple[Path, list[str]] | str:
    """(the file's real path, its lines), or why the path cannot take a finding."""
    if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
        return "Error: `path` is required: a file of the working directory, relative to it."
    if len(raw) > FindingLimits.path:
        return f"Error: `path` is longer than {FindingLimits.path} characters."
    real_workdir = workdir.resolve()
    path = Path(os.path.normpath(real_workdir / raw))
    shown = repr(raw[:200])
    if not path.is_relative_to(real_workdir) or path == real_workdir:
        return f"Error: {shown} is outside the working directory; report findings on its files."
    try:
        if path.resolve() != path:
            return f"Error: {shown} is or goes through a symlink; name the file it points at."
        info = path.lstat()
    except (OSError, RuntimeError, UnicodeEncodeError):  # a lone surrogate names no file
        return f"Error: {shown} does not exist in the working directory; check the path."
    if not stat.S_ISREG(info.st_mode):
        return f"Error: {shown} is not a regular file; report findings on files."
    if info.st_size > FindingLimits.file_bytes:
        return f"Error: {shown} is over {FindingLimits.file_bytes} bytes; no finding on it."
    try:
        data = path.read_bytes()
    except OSError as error:
        return f"Error: {shown} cannot be read ({error.strerror or error})."
    if b"\0" in data[:_BINARY_PROBE]:
        return f"Error: {shown} is a binary file; report findings on text files."
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    return path, lines


def _number(value: Any) -> Any:
    """A line number written as digits ("12", as some models send them) is that number."""
    if isinstance(value, str) and value.strip().isdigit() and len(value) < 10:
        return int(value)
    return value


def _span(arguments: Mapping[str, Any], count: int) -> tuple[int, int] | str:
    line, end = _number(arguments.get("line")), _number(arguments.get("end_line"))
    if end is None:
        end = line
    for name, value in (("line", line), ("end_line", end)):
        if not isinstance(value, int) or isinstance(value, bool):
            return f"Error: `{name}` must be a line number (1-based)."
        if not 1 <= value <= count:
            return f"Error: `{name}` {value} is not a line of the file, which has {count} lines."
    assert isinstance(line, int) and isinstance(end, int)
    if end < line:
        return f"Error: `end_line` {end} is before `line` {line}."
    if end - line >= FindingLimits.lines:
        return f"Error: a finding spans at most {FindingLimits.lines} lines; narrow it."
    return line, end
