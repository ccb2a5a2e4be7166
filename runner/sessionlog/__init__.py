"""The session log (DESIGN section 8): a versioned JSONL record of a session, written as it goes.

`SessionLogWriter.create(out_dir, header, redactor)` starts `<out>/sessions/<session-id>.jsonl`;
`read_session(path)` reads one back. The format is docs/session-log.md and
docs/session-log.schema.json. The code lives in `format` (the versioned contract, ids, errors),
`writer`, `events` (`--events`: the records streamed as they are written), `files` (spilled
results and the saved prompt), `reader`, `children` (sub-agent logs beside their parent's),
`view` (`log show` and `log export`) and `html` (`log export --format html`); import it from
here.
"""

from __future__ import annotations

from runner.sessionlog.children import child_log_path, children_of
from runner.sessionlog.events import EventStream
from runner.sessionlog.format import (
    EVENT_TYPES,
    FORMAT_VERSION,
    CompactionKind,
    Header,
    LogReadError,
    LogWriteError,
    host_facts,
    iso_utc,
    new_session_id,
    prompt_sha256,
)
from runner.sessionlog.html import export_html
from runner.sessionlog.reader import (
    SessionRecord,
    find_sessions,
    latest_sessions,
    read_session,
    rebuild_messages,
    sessions_to_resume,
    spilled_text,
    status_of,
)
from runner.sessionlog.view import export_json, export_markdown, show_text
from runner.sessionlog.writer import (
    DEFAULT_PREVIEW_BYTES,
    DEFAULT_RESULT_CAP_BYTES,
    SessionLogWriter,
)

__all__ = [
    "DEFAULT_PREVIEW_BYTES",
    "DEFAULT_RESULT_CAP_BYTES",
    "EVENT_TYPES",
    "EventStream",
    "FORMAT_VERSION",
    "CompactionKind",
    "Header",
    "LogReadError",
    "LogWriteError",
    "SessionLogWriter",
    "SessionRecord",
    "child_log_path",
    "children_of",
    "export_html",
    "export_json",
    "export_markdown",
    "find_sessions",
    "latest_sessions",
    "host_facts",
    "iso_utc",
    "new_session_id",
    "prompt_sha256",
    "read_session",
    "rebuild_messages",
    "sessions_to_resume",
    "show_text",
    "spilled_text",
    "status_of",
]
