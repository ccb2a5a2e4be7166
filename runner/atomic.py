"""Write a whole file at once: readers (and a kill) never see half of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["ARTIFACT_MODE", "write_text_atomic"]

ARTIFACT_MODE = 0o644
"""Artifacts are readable by everyone: mkstemp's 0600 would lock out the host user of a container
run, or a CI step running as another user."""


def write_text_atomic(path: Path, text: str, newline: str | None = "") -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`.

    A lone surrogate in `text` (JSON lets a model send "\\ud83d" alone, and a finding's message or
    a task's result carries it into every report) cannot be UTF-8: it is written as its escape
    `\\ud83d`, which in a JSON string reads back as itself, as the session log does, instead of
    ending the run's reports with UnicodeEncodeError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(
            fd, "w", encoding="utf-8", errors="backslashreplace", newline=newline
        ) as handle:
            handle.write(text)
        tmp.chmod(ARTIFACT_MODE)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
