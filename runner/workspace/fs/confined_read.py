"""Read a file of the workdir for the prompt: regular files inside the workdir only, bounded.

The prompt builder reads files a repository controls (AGENTS.md, every `.gitignore` of the file
listing). A symlink to `/proc/self/environ` would put the runner's environment in the prompt, one to
`/dev/zero` would be read until memory runs out, and a FIFO would block the open forever. So a file
is read only when it lies inside the workdir (opened beneath it: runner.workspace.fs.beneath) and is
a regular file, opened without blocking, and never past `max_bytes`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from runner.workspace.fs.beneath import open_beneath

__all__ = ["DEFAULT_PROMPT_FILE_BYTES", "Bounded", "read_confined"]

DEFAULT_PROMPT_FILE_BYTES = 1_000_000
"""The default of the `prompt_file_max_bytes` setting."""


@dataclass(frozen=True)
class Bounded:
    """What was read of a file, and whether it was longer than the limit."""

    text: str
    truncated: bool


def read_confined(path: Path, root: Path, max_bytes: int) -> Bounded | None:
    """The text of `path` (at most `max_bytes`), or None when it is missing, unreadable, not a
    regular file, or resolves outside `root`."""
    try:
        try:
            rel = path.relative_to(root)
        except ValueError:
            rel = path.resolve(strict=True).relative_to(root.resolve(strict=True))
        # Opened beneath the root (no folder on the way can be swapped for a link out of it in
        # between); O_NONBLOCK: opening a FIFO must not wait for a writer.
        fd = open_beneath(root, rel.as_posix(), os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, RuntimeError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    truncated = len(data) > max_bytes
    return Bounded(data[:max_bytes].decode("utf-8", errors="replace"), truncated)
