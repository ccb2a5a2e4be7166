"""A command's output as it streams in: a capped output file, and the head and tail for the model.

execute_command used to let the command write to a file and then read that file whole into memory:
1 GB of output took 2 GB of the runner's memory, and `yes` for three seconds took 3 GB. The output
now comes through a pipe, chunk by chunk, and nothing grows with it:

- the output file keeps the first `max_bytes` (the setting
  `workspace_limits.command_output_max_bytes`); past that the command keeps running and its
  output is read and dropped, except for its last part, which is appended to the file when the
  command ends, after a line saying how much was dropped;
- the model gets the first quarter and the last three quarters of `MAX_OUTPUT_CHARS` characters.

Reading on past the cap, rather than killing the command there, is deliberate: a build that prints
10 MB of logs and then its result must still end normally, and its result is in the tail.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

__all__ = ["MAX_OUTPUT_CHARS", "OutputSink"]

MAX_OUTPUT_CHARS = 20_000
"""Output execute_command returns; the rest is in the output file."""
_HEAD_CHARS = MAX_OUTPUT_CHARS // 4
_TAIL_CHARS = MAX_OUTPUT_CHARS - _HEAD_CHARS
_HEAD_BYTES = _HEAD_CHARS * 4
"""Enough bytes for the head's characters, however wide their UTF-8 encoding."""
_TAIL_BYTES = _TAIL_CHARS * 4


class OutputSink:
    """Takes a command's output chunk by chunk; memory stays under 100 KB whatever comes."""

    def __init__(self, file: BinaryIO, path: Path, max_bytes: int) -> None:
        self.path = path
        self._file = file
        self._max_bytes = max_bytes
        self._written = 0
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        """Bytes the command wrote."""

    def write(self, chunk: bytes) -> None:
        """Take the next chunk of output."""
        self.total += len(chunk)
        if self._written < self._max_bytes:
            part = chunk[: self._max_bytes - self._written]
            self._file.write(part)
            self._written += len(part)
        room = _HEAD_BYTES - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > 2 * _TAIL_BYTES:  # trimmed now and then, not on every chunk
                del self._tail[:-_TAIL_BYTES]

    def close(self) -> None:
        """End the output file; past the cap, with a note and the output's last part."""
        if self.total > self._written:
            if self.total == len(self._head) + len(self._tail):  # all of it is still in memory
                self._file.write(bytes(self._head + self._tail)[self._written :])
            else:
                tail = bytes(self._tail[-_TAIL_BYTES:])
                tail_starts = self.total - len(tail)
                if tail_starts > self._written:
                    self._file.write(
                        f"\n... [{tail_starts - self._written} bytes not kept: over the "
                        f"{self._max_bytes}-byte limit of this file] ...\n".encode()
                    )
                self._file.write(tail[max(self._written - tail_starts, 0) :])
        self._file.close()

    def text(self) -> str:
        """The output as the model sees it: whole, or its head and tail around a note."""
        if not self.total:
            return "(no output)"
        dropped = self.total - len(self._head) - len(self._tail)
        if dropped <= 0:
            whole = (self._head + self._tail).decode("utf-8", errors="replace")
            if len(whole) <= MAX_OUTPUT_CHARS:
                return whole
            head, tail = whole[:_HEAD_CHARS], whole[-_TAIL_CHARS:]
        else:
            head = self._head.decode("utf-8", errors="replace")[:_HEAD_CHARS]
            tail = bytes(self._tail[-_TAIL_BYTES:]).decode("utf-8", errors="replace")
            tail = tail[-_TAIL_CHARS:]
        kept = (
            f"the full output ({self.total} bytes) is in {self.path}"
            if self.total <= self._max_bytes
            else f"its first {self._max_bytes} bytes and its end (of {self.total} bytes) are in "
            f"{self.path}"
        )
        return (
            f"{head}\n... [output cut in the middle; {kept}, readable with read_file] ...\n{tail}"
        )
