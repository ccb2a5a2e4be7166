"""`--events FILE|-`: every session-log record as it is written, to a stream that follows the run.

Each record is one JSON line, `{"task": NAME, "session_id": ID, "record": LINE}`, where `LINE` is
the log's line exactly as written (so masked exactly like the log: it is the same text, never a
second rendering) and `NAME` the task's name as the log's header has it. Every line is flushed
as it is written, for readers such as `jq -c` or a CI step's live view; a reader that goes away
does not stop the run. The last line is the run's end: `{"task": null, "session_id": null,
"record": {"type": "run_end", ...}}` with the exit code and totals (as `claude -p`'s stream-json
ends with its result record).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from runner.errors import ConfigError
from runner.sessionlog.format import LogWriteError

__all__ = ["EventStream"]


class EventStream:
    """Where the run's records are streamed; open with `open`, end with `close`."""

    def __init__(self, handle: IO[str], path: Path | None) -> None:
        self._handle: IO[str] | None = handle
        self._path = path
        """The file, or None for stdout (which is left open)."""
        self._lock = threading.Lock()  # sessions of one run write from one loop; a thread may too

    @classmethod
    def open(cls, target: str) -> EventStream:
        """`-` for stdout, else a file (created or truncated); ConfigError when it cannot be."""
        if target == "-":
            return cls(sys.stdout, None)
        path = Path(target)
        try:
            handle = path.open("w", encoding="utf-8", errors="backslashreplace", newline="\n")
        except OSError as error:
            why = error.strerror or error
            raise ConfigError(f"--events {target}: cannot write it: {why}") from None
        return cls(handle, path)

    def record(self, task: str, session_id: str, line: str) -> None:
        """Stream one log line (JSON text as written to the log, without its newline)."""
        head = json.dumps({"task": task, "session_id": session_id}, ensure_ascii=False)
        self._write(f'{head[:-1]}, "record": {line}}}\n')

    def run_end(self, record: Mapping[str, Any]) -> None:
        """The stream's last line: the run's end (`type: run_end`, its exit code, counts and
        totals, each task's status and result), after every session's records, with `task` and
        `session_id` null. `record` is masked by the caller."""
        line = json.dumps({"type": "run_end", **record}, ensure_ascii=False)
        self._write(f'{{"task": null, "session_id": null, "record": {line}}}\n')

    def _write(self, text: str) -> None:
        with self._lock:
            if self._handle is None:
                return
            try:
                self._handle.write(text)
                self._handle.flush()
            except (BrokenPipeError, ValueError):
                self._handle = None  # the reader left (or the stream closed): the run goes on
            except OSError as error:
                raise LogWriteError(self._path or Path("<stdout>"), error) from error

    def close(self) -> None:
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None and self._path is not None:
            handle.close()
