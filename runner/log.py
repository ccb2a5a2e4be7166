"""The session log (DESIGN section 8): a versioned JSONL record of a session, written as it goes.

`SessionLogWriter.create(out_dir, header, redactor)` starts `<out>/sessions/<session-id>.jsonl`;
`read_session(path)` reads one back. The format is docs/session-log.md and
docs/session-log.schema.json. The code lives in `log_format` (contract, ids, errors),
`log_writer` and `log_reader`; import it from here.
"""

from __future__ import annotations

from runner.log_format import (
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
from runner.log_reader import (
    SessionRecord,
    find_sessions,
    read_session,
    rebuild_messages,
    sessions_to_resume,
    spilled_text,
    status_of,
)
from runner.log_writer import DEFAULT_PREVIEW_BYTES, DEFAULT_RESULT_CAP_BYTES, SessionLogWriter

__all__ = [
    "DEFAULT_PREVIEW_BYTES",
    "DEFAULT_RESULT_CAP_BYTES",
    "EVENT_TYPES",
    "FORMAT_VERSION",
    "CompactionKind",
    "Header",
    "LogReadError",
    "LogWriteError",
    "SessionLogWriter",
    "SessionRecord",
    "find_sessions",
    "host_facts",
    "iso_utc",
    "new_session_id",
    "prompt_sha256",
    "read_session",
    "rebuild_messages",
    "sessions_to_resume",
    "spilled_text",
    "status_of",
]
