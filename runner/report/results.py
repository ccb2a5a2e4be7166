"""Structured results (DESIGN 12): `<out>/results/<task>.json` for each task that passed with a
result fitting `success.expect.json_schema`.

A task name is free text, so the file name is made safe: letters, digits, `.`, `_` and `-` are
kept, anything else becomes `_`, and a name that had to change (or starts with a dot) gets a
short hash of the original, so two names never share a file and nothing lands outside the folder.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

from runner.atomic import write_text_atomic
from runner.outcome import RunSummary
from runner.redact import Redactor

__all__ = [
    "RESULTS_DIR",
    "result_file_name",
    "result_text",
    "write_result_file",
    "write_results",
]

RESULTS_DIR = "results"
"""The folder under `--out` that holds the structured results."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_NAME_LIMIT = 120


def result_file_name(task_name: str) -> str:
    """`<task>.json`, or a safe stand-in with a hash when the name cannot be a file name as is."""
    safe = _UNSAFE.sub("_", task_name)[:_NAME_LIMIT]
    if safe != task_name or not safe or safe.startswith("."):
        digest = hashlib.sha256(task_name.encode("utf-8")).hexdigest()[:8]
        safe = f"{safe.lstrip('.') or 'task'}-{digest}"
    return f"{safe}.json"


def write_results(summary: RunSummary, folder: Path, redactor: Redactor) -> None:
    """Write one JSON file per structured result into `folder` (created only when needed); a task
    of this run without one loses the file an earlier run into the same folder left for it."""
    for outcome in summary.outcomes:
        if outcome.structured_result is None:
            (folder / result_file_name(outcome.label)).unlink(missing_ok=True)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(redactor.data(outcome.structured_result), indent=2, ensure_ascii=False)
        write_text_atomic(folder / result_file_name(outcome.label), text + "\n")


def result_text(summary: RunSummary, redactor: Redactor) -> str:
    """One task's final result text as it is (empty when it gave none), or for several a JSON
    object of task name to result (null when none); masked."""
    if len(summary.outcomes) == 1:
        return redactor.text(summary.outcomes[0].result or "")
    results = {o.label: o.result for o in summary.outcomes}  # `task [i/K]` for a sample
    return json.dumps(redactor.data(results), indent=2, ensure_ascii=False) + "\n"


def write_result_file(summary: RunSummary, path: Path, redactor: Redactor) -> None:
    """`--result-file` (DESIGN 20): `result_text` into `path`.

    `-` is stdout. An existing path that is not a regular file (a symlink, `/dev/stdout`, a
    FIFO) is written through, as a shell's `>` would, never replaced by a regular file; one
    that cannot be opened for writing is an OSError (reported, exit 4)."""
    text = result_text(summary, redactor)
    if str(path) == "-":
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        sys.stdout.flush()
        return
    if path.is_symlink() or (path.exists() and not path.is_file()):
        with path.open("w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            handle.write(text)
        return
    write_text_atomic(path, text)
