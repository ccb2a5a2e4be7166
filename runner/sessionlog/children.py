"""Sub-agent sessions as seen from their parent's log (DESIGN section 13).

A `tool_call` event of a `sub_agent` call names the child's session (`child_session_id`); the
child's log lies beside the parent's, and its header names the parent (`parent_session_id`,
`parent_call`). `log show` and `log export` nest a child under the call that started it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.sessionlog.reader import SessionRecord

__all__ = ["MAX_NESTING", "child_log_path", "children_of", "indented"]

MAX_NESTING = 5
"""Levels of children shown under one log: a bound, should a log ever name itself."""
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def child_log_path(record: SessionRecord, event: dict[str, Any]) -> Path | None:
    """The log of the child a tool_call started, when it names one (it may be missing)."""
    child = event.get("child_session_id")
    if not isinstance(child, str) or not _SAFE_ID.fullmatch(child):
        return None  # a log is an artifact from elsewhere: its reference stays beside it
    return record.path.parent / f"{child}.jsonl"


def indented(text: str, prefix: str = "    ") -> str:
    """`text` with every non-empty line indented by `prefix`."""
    return "\n".join(prefix + line if line else line for line in text.rstrip("\n").split("\n"))


def children_of(record: SessionRecord) -> Iterator[SessionRecord]:
    """The sub-agent sessions beside `record` that it started, in start order."""
    from runner.sessionlog.reader import read_session

    found = []
    for path in sorted(record.path.parent.glob("*.jsonl")):
        if path == record.path:
            continue
        try:
            with path.open("rb") as file:
                first = file.readline()
        except OSError:
            continue
        if record.session_id.encode() not in first:
            continue  # cheap filter before parsing: most logs are not children of this one
        child = read_session(path)
        if child.header.get("parent_session_id") == record.session_id:
            found.append(child)
    yield from found
