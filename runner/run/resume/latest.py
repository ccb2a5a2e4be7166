"""`resume --latest`: the sessions of the newest run under `--out` (DESIGN 20).

The newest run is the one whose sessions started last (`run_id` groups them). Its sessions that
did not pass are resumed, as a folder's are; when every one passed, all of them, so that a
finished `run -p` can go on with `resume --latest --message ...`. Sub-agents' sessions are never
taken: resuming their parent settles them.
"""

from __future__ import annotations

from pathlib import Path

from runner.errors import ConfigError
from runner.sessionlog import SessionRecord, find_sessions, read_session, status_of

__all__ = ["latest_run_logs"]


def latest_run_logs(out: Path) -> list[Path]:
    """The logs `resume --latest` continues; ConfigError when `out` holds no session."""
    folder = out / "sessions"
    logs = find_sessions(folder) if folder.is_dir() else []
    records = [read_session(log) for log in logs]
    records = [r for r in records if not r.header.get("parent_session_id")]
    if not records:
        raise ConfigError(
            f"resume --latest: no session logs under {folder}; pass the --out the run wrote to"
        )
    newest = max(records, key=_started).header.get("run_id")
    run = [r for r in records if r.header.get("run_id") == newest]
    unfinished = [r for r in run if status_of(r) != "passed"]
    return [r.path for r in unfinished or run]


def _started(record: SessionRecord) -> tuple[str, str]:
    return str(record.header.get("started_at") or ""), record.path.name
