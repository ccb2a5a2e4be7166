"""Read session logs back, for `resume`, `log show` and `log export`. See docs/session-log.md."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.sessionlog.format import FORMAT_VERSION, LogReadError

__all__ = [
    "SessionRecord",
    "find_sessions",
    "read_session",
    "rebuild_messages",
    "sessions_to_resume",
    "spilled_text",
    "status_of",
]


@dataclass(frozen=True)
class SessionRecord:
    """One session log as read from disk."""

    path: Path
    """The log file."""
    header: dict[str, Any]
    """The first line: version, ids, task, model, prompt, tools, host, start time."""
    events: list[dict[str, Any]]
    """Every line after the header, in order; the end line, when there is one, is the last."""
    end: dict[str, Any] | None
    """The end line, or None when the session was cut off before it."""
    torn: bool = False
    """True when an unreadable last line (a write cut off by a kill) was ignored."""

    @property
    def session_id(self) -> str:
        """The session's id."""
        return str(self.header["session_id"])

    @property
    def parent_id(self) -> str | None:
        """The id of the session this one resumed, if any."""
        parent = self.header.get("parent_id")
        return str(parent) if parent else None

    @property
    def version(self) -> int:
        """The format version the log was written in."""
        return int(self.header["version"])


def _parse(raw: bytes) -> dict[str, Any] | None:
    """The line's JSON object, or None when it is not one."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return None
    return value


def _check_header(path: Path, header: dict[str, Any] | None) -> dict[str, Any]:
    if header is None or header["type"] != "header":
        raise LogReadError(path, "the first line is not a session log header", line=1)
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LogReadError(path, f"the header's version {version!r} is not a format version", 1)
    if version > FORMAT_VERSION:
        raise LogReadError(
            path,
            f"written in session log format version {version}, but this agent-runner reads "
            f"versions up to {FORMAT_VERSION}; upgrade agent-runner to read it",
            line=1,
        )
    if not isinstance(header.get("session_id"), str) or not header["session_id"]:
        raise LogReadError(path, "the header has no session_id", line=1)
    return header


def read_session(path: Path) -> SessionRecord:
    """Read a log. A torn last line is ignored (`torn`); any other bad line raises LogReadError
    naming its line number, as does a missing header or a format version newer than this reader's.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise LogReadError(path, f"cannot read session log: {error.strerror or error}") from error
    # Split on "\n" only: str.splitlines would also split inside strings at U+2028 and friends.
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    if not raw_lines:
        raise LogReadError(path, "the session log is empty (the session never started)")

    torn = False
    parsed: list[dict[str, Any]] = []
    for number, raw in enumerate(raw_lines, start=1):
        line = _parse(raw)
        if line is not None:
            parsed.append(line)
        elif number == len(raw_lines) and number > 1:
            # The process was killed while writing this line; everything before it is whole.
            torn = True
        else:
            raise LogReadError(path, "not a JSON object with a `type`", line=number)

    header = _check_header(path, parsed[0])
    events = parsed[1:]
    end: dict[str, Any] | None = None
    for number, event in enumerate(events, start=2):
        if end is not None:
            raise LogReadError(path, f"a {event['type']} line after the end line", line=number)
        if event["type"] == "header":
            raise LogReadError(path, "a second header line", line=number)
        if event["type"] == "end":
            end = event
    return SessionRecord(path=path, header=header, events=events, end=end, torn=torn)


def rebuild_messages(record: SessionRecord) -> list[dict[str, Any]]:
    """The context as it stood at the end of the log, as `{role, content}` dicts in order (with
    `tool_calls`/`tool_results` for the messages of a native session that have them).

    Messages append; a `compaction` or `resume` event replaces the context with its `messages`.
    """
    messages: list[dict[str, Any]] = []
    for event in record.events:
        if event["type"] == "message":
            messages.append(_message(event))
        elif event["type"] in ("compaction", "resume"):
            messages = [_message(m) for m in event["messages"]]
    return messages


def _message(line: dict[str, Any]) -> dict[str, Any]:
    # `context`: what the context kept of a message the log keeps whole (a useless cut reply).
    content = line["context"] if isinstance(line.get("context"), str) else line["content"]
    message: dict[str, Any] = {"role": str(line["role"]), "content": str(content)}
    for key in ("tool_calls", "tool_results"):
        if isinstance(line.get(key), list) and line[key]:
            message[key] = line[key]
    return message


def status_of(record: SessionRecord) -> str:
    """The end line's status (`passed`, `failed`, ...), or `incomplete` without an end line."""
    return str(record.end["status"]) if record.end is not None else "incomplete"


def find_sessions(path: Path) -> list[Path]:
    """The logs at `path`: the file itself, or every `*.jsonl` in the folder's `sessions/` (when
    it has one) or else in the folder itself, sorted by name (which sorts by start time)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise LogReadError(path, "no such session log or folder")
    folder = path / "sessions" if (path / "sessions").is_dir() else path
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file())


def _task_key(record: SessionRecord) -> tuple[str, str, str]:
    """Which task a session ran: its name and its task file (relative to the checkout when the
    log says, so that copies of one task run on different machines count as one task), and for
    a sample of a repeated task, which sample (DESIGN 22): each sample is resumed on its own."""
    task = record.header.get("task")
    name = str(task.get("name", "")) if isinstance(task, dict) else ""
    checkout = record.header.get("checkout")
    where = checkout.get("task_file") if isinstance(checkout, dict) else None
    sample = str(record.header.get("sample") or "") if record.header.get("of") else ""
    return name, str(where or record.header.get("task_file") or ""), sample


def sessions_to_resume(path: Path) -> list[Path]:
    """The logs at `path` to resume: per task, only its latest session, and only when that one
    did not pass (failed, budget_exceeded, error, interrupted, or no end line). A session that
    another session there resumed is never the latest; among the rest the latest started last
    (`started_at`, then the file name). Sub-agent sessions are skipped: resuming their parent
    settles them."""
    chosen = {r.path for r in latest_sessions(path) if status_of(r) != "passed"}
    return [p for p in find_sessions(path) if p in chosen]


def latest_sessions(path: Path) -> list[SessionRecord]:
    """Per task (per sample of a repeated task) at `path`, its latest session, whatever its
    status, in the order `find_sessions` gives: how `sessions_to_resume` chooses, and how a
    resume reports a repeated task over all its samples."""
    records = [read_session(p) for p in find_sessions(path)]
    parents = {r.parent_id for r in records if r.parent_id}
    latest: dict[tuple[str, str, str], SessionRecord] = {}
    for record in records:
        if record.session_id in parents or record.header.get("parent_session_id"):
            continue
        key = _task_key(record)
        order = (str(record.header.get("started_at") or ""), record.path.name)
        known = latest.get(key)
        if known is None or order > (str(known.header.get("started_at") or ""), known.path.name):
            latest[key] = record
    kept = {r.path for r in latest.values()}
    return [r for r in records if r.path in kept]


def spilled_text(log_path: Path, event: dict[str, Any]) -> str:
    """The whole tool result (or check output) of an event, from its spill file if it has one."""
    ref = event.get("result_ref") if event["type"] == "tool_call" else event.get("output_ref")
    inline = event.get("result") if event["type"] == "tool_call" else event.get("output")
    if not ref:
        return str(inline or "")
    target = log_path.parent / str(ref)
    # A log is an artifact that may come from elsewhere; its reference must stay beside it.
    if not target.resolve().is_relative_to(log_path.parent.resolve()):
        raise LogReadError(log_path, f"spill reference {ref!r} points outside the log's folder")
    try:
        return target.read_text(encoding="utf-8")
    except OSError as error:
        raise LogReadError(
            target, f"cannot read spilled output: {error.strerror or error}"
        ) from error
