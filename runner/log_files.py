"""The files beside a session log: spilled outputs and the prompt saved under its hash."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from runner.log_format import LogWriteError

__all__ = ["save_prompt", "spill"]


def spill(folder: Path, ref: str, text: str, cap: int, preview: int) -> tuple[str, str | None, int]:
    """`(text, None, size)` when `text` fits in `cap` UTF-8 bytes; else the whole text goes to
    `folder / ref` and the result is `(its first `preview` bytes, ref, size)`."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text, None, len(data)
    target = folder / ref
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except OSError as error:
        raise LogWriteError(target, error) from error
    # A cut inside a multi-byte character drops that character rather than the whole preview.
    return data[:preview].decode("utf-8", errors="ignore"), ref, len(data)


def save_prompt(folder: Path, prompt: str, sha256: str) -> None:
    """Save `prompt` as `folder/<sha256>.md` unless a file of that name exists."""
    target = folder / f"{sha256}.md"
    if target.exists():
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Written to a temporary name and renamed, so that concurrent tasks sharing a prompt
        # never see (or leave behind) a half-written file.
        fd, name = tempfile.mkstemp(dir=folder, prefix=".prompt-", suffix=".tmp")
    except OSError as error:
        raise LogWriteError(target, error) from error
    temp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(prompt)
        temp.replace(target)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise LogWriteError(target, error) from error
