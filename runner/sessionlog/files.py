"""The files beside a session log: spilled outputs and the prompt saved under its hash."""

from __future__ import annotations

from pathlib import Path

from runner.atomic import write_text_atomic
from runner.sessionlog.format import LogWriteError

__all__ = ["save_prompt", "spill"]


def spill(folder: Path, ref: str, text: str, cap: int, preview: int) -> tuple[str, str | None, int]:
    """`(text, None, size)` when `text` fits in `cap` UTF-8 bytes; else the whole text goes to
    `folder / ref` and the result is `(its first `preview` bytes, ref, size)`."""
    # A lone surrogate (see the writer) is kept as its `\udXXX` escape rather than crashing.
    data = text.encode("utf-8", errors="backslashreplace")
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
        # Atomic, so that concurrent tasks sharing a prompt never see a half-written file.
        write_text_atomic(target, prompt, newline="\n")
    except OSError as error:
        raise LogWriteError(target, error) from error
