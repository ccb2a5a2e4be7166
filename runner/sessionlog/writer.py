"""Write a session log as the session happens: one JSON object per line, flushed per event.

Every string goes through the redactor before it reaches the disk. See docs/session-log.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal

from runner.outcome import Finding, Grade, Status, Totals
from runner.redact import Redactor
from runner.sessionlog.events import EventStream
from runner.sessionlog.files import save_prompt, spill
from runner.sessionlog.format import (
    Clock,
    CompactionKind,
    Header,
    LogWriteError,
    iso_utc,
    new_session_id,
    prompt_sha256,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["DEFAULT_PREVIEW_BYTES", "DEFAULT_RESULT_CAP_BYTES", "SessionLogWriter"]

DEFAULT_RESULT_CAP_BYTES = 64 * 1024
"""Tool results and check outputs over this many UTF-8 bytes are stored in a file of their own."""
DEFAULT_PREVIEW_BYTES = 4 * 1024
"""How much of a spilled result stays in the log line."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


class SessionLogWriter:
    """Appends events to `<out>/sessions/<session-id>.jsonl`; make one with `create`."""

    def __init__(
        self,
        *,
        out_dir: Path,
        path: Path,
        handle: IO[str],
        header: dict[str, Any],
        redactor: Redactor,
        result_cap_bytes: int,
        preview_bytes: int,
        clock: Clock,
        events: EventStream | None = None,
    ) -> None:
        self.out_dir = out_dir
        """The artifacts folder (`--out`)."""
        self.path = path
        """The log file."""
        self.header = header
        """The header line as written (redacted)."""
        self.session_id: str = header["session_id"]
        """This session's id: the log's file name without `.jsonl`."""
        self.prompt_path = out_dir / "prompts" / f"{header['system_prompt_sha256']}.md"
        """The rendered system prompt, saved under its content hash."""
        self._handle: IO[str] | None = handle
        self._redactor = redactor
        self._result_cap = result_cap_bytes
        self._preview = preview_bytes
        self._clock = clock
        self._tool_calls = 0
        self._checks = 0
        self._ended = False
        self._events = events
        """`--events`: each line written is streamed there too, as written (masked)."""
        task = header.get("task")
        self._task_name = str(task.get("name", "")) if isinstance(task, Mapping) else ""

    @classmethod
    def create(
        cls,
        out_dir: Path,
        header: Mapping[str, Any] | Header,
        redactor: Redactor,
        *,
        result_cap_bytes: int = DEFAULT_RESULT_CAP_BYTES,
        preview_bytes: int = DEFAULT_PREVIEW_BYTES,
        clock: Clock | None = None,
        events: EventStream | None = None,
    ) -> SessionLogWriter:
        """Start a log: save the prompt under its hash, create the file and write the header.

        A header without `session_id` gets a new one from the task's `name`; one without
        `started_at` gets the clock's time. Raises LogWriteError when a file cannot be written.
        """
        clock = clock or _utc_now
        head = header if isinstance(header, Header) else Header.from_dict(header)
        started = clock()
        if not head.session_id:
            # The id names files and is how summaries and resumes refer to the log, and a file
            # name cannot be masked once written: so it is built from the task name with any
            # secret already cut out, and the redactor never rewrites it (a secret inside a task
            # name once made it an invalid file name and crashed the task).
            name = redactor.text(str(head.task.get("name", "task")))
            head = dataclasses.replace(head, session_id=new_session_id(name, started))
        if not head.started_at:
            head = dataclasses.replace(head, started_at=iso_utc(started))
        line: dict[str, Any] = redactor.data(head.to_line())
        line["session_id"], line["parent_id"] = head.session_id, head.parent_id
        line["system_prompt_sha256"] = prompt_sha256(line["system_prompt"])

        if not _SAFE_ID.fullmatch(line["session_id"]):
            raise ValueError(f"session id {line['session_id']!r} is not a safe file name")
        sessions = out_dir / "sessions"
        path = sessions / f"{line['session_id']}.jsonl"
        save_prompt(out_dir / "prompts", line["system_prompt"], line["system_prompt_sha256"])
        try:
            sessions.mkdir(parents=True, exist_ok=True)
            # "x": two sessions must never share a file, even if an id were reused.
            # backslashreplace: a lone surrogate (JSON lets a model or server send "\ud83d"
            # alone) cannot be UTF-8; written as `\ud83d` it is the JSON escape of itself.
            handle = path.open("x", encoding="utf-8", errors="backslashreplace", newline="\n")
        except OSError as error:
            raise LogWriteError(path, error) from error
        writer = cls(
            out_dir=out_dir,
            path=path,
            handle=handle,
            header=line,
            redactor=redactor,
            result_cap_bytes=result_cap_bytes,
            preview_bytes=preview_bytes,
            clock=clock,
            events=events,
        )
        try:
            writer._write(line, keep=("session_id", "parent_id"))
        except LogWriteError:
            with contextlib.suppress(OSError):  # closing retries the failed write; keep its error
                handle.close()
            raise
        return writer

    @property
    def ended(self) -> bool:
        """True once `end` has been written."""
        return self._ended

    def message(
        self,
        role: Literal["user", "assistant"],
        content: str,
        turn: int,
        *,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        tool_results: Sequence[Mapping[str, Any]] | None = None,
        context: str | None = None,
    ) -> None:
        """A message added to the context: the task prompt, a reply, tool results, a resume note.
        Native mode: an assistant message's `tool_calls` (`{id, name, arguments}`), a user
        message's `tool_results` (`{id, name, content, is_error}`), kept for resume. `context`:
        what the context kept instead of the whole `content` (a useless cut reply's head and
        tail), when it differs."""
        if role not in ("user", "assistant"):
            raise ValueError(f"message role must be user or assistant, not {role!r}")
        extra: dict[str, Any] = {"tool_calls": list(tool_calls)} if tool_calls else {}
        if tool_results:
            extra["tool_results"] = list(tool_results)
        if context is not None:
            extra["context"] = context
        self._event("message", role=role, content=content, turn=turn, **extra)

    def model_call(
        self,
        turn: int,
        *,
        latency_s: float,
        usage: Mapping[str, Any] | DataclassInstance,
        cost_usd: float | None,
        retries: int,
        stop_reason: str | None,
        model: str,
        request: Mapping[str, int] | None = None,
    ) -> None:
        """One completed model call and its usage (a mapping or a dataclass such as `llm.Usage`;
        `estimated` is true when the provider reported none and the counts were estimated).
        `request`: the request's estimated tokens by part (DESIGN 28), when it was measured."""
        raw = usage if isinstance(usage, Mapping) else dataclasses.asdict(usage)
        counts = {
            key: int(raw.get(key) or 0)
            for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        }
        self._event(
            "model_call",
            turn=turn,
            model=model,
            latency_s=latency_s,
            usage={**counts, "estimated": bool(raw.get("estimated", False))},
            cost_usd=cost_usd,
            retries=retries,
            stop_reason=stop_reason,
            **({"request": {k: int(v) for k, v in request.items()}} if request else {}),
        )

    def tool_call(
        self,
        turn: int,
        *,
        tool: str,
        server: str,
        arguments: Mapping[str, Any],
        result: str,
        is_error: bool,
        duration_s: float,
        child_session_id: str | None = None,
        call_id: str | None = None,
        loaded_tools: Sequence[str] | None = None,
    ) -> None:
        """One tool call and its result; a result over the cap is stored in a file of its own.
        `child_session_id`: the session a `sub_agent` call started; `call_id`: the provider's
        id of a native call; `loaded_tools`: what a `find_tools` call loaded (DESIGN 28)."""
        self._tool_calls += 1
        preview, ref, size = self._spill("tool-results", self._tool_calls, result)
        child = {"child_session_id": child_session_id} if child_session_id else {}
        if call_id:
            child["call_id"] = call_id
        extra: dict[str, Any] = {"loaded_tools": list(loaded_tools)} if loaded_tools else {}
        self._event(
            "tool_call",
            turn=turn,
            tool=tool,
            server=server,
            # The model names these keys: one may hold a secret (field names never do).
            arguments=self._redactor.data(dict(arguments), keys=True),
            result=preview,
            result_ref=ref,
            result_bytes=size,
            is_error=is_error,
            duration_s=duration_s,
            **child,
            **extra,
        )

    def compaction(
        self,
        turn: int,
        *,
        kind: CompactionKind,
        before_tokens: int,
        after_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        summary: str | None = None,
    ) -> None:
        """The context was compacted; `messages` is the whole new context, for resume to rebuild."""
        if kind not in ("clear_tool_results", "summary"):
            raise ValueError(f"compaction kind must be clear_tool_results or summary, not {kind!r}")
        self._event(
            "compaction",
            turn=turn,
            kind=kind,
            before_tokens=before_tokens,
            after_tokens=after_tokens,
            messages=_messages(messages),
            summary=summary,
        )

    def resume(self, parent_id: str, messages: Sequence[Mapping[str, Any]]) -> None:
        """The context this resumed session starts from (its parent's), before any new message."""
        self._event("resume", parent_id=parent_id, messages=_messages(messages))

    def check(self, command: str, exit_code: int, output: str, attempt: int) -> None:
        """One run of a success check; long output is stored in a file of its own."""
        self._checks += 1
        preview, ref, size = self._spill("check-output", self._checks, output)
        self._event(
            "check",
            command=command,
            exit_code=exit_code,
            output=preview,
            output_ref=ref,
            output_bytes=size,
            attempt=attempt,
        )

    def retry(
        self, turn: int, attempt: int, reason: str, status: int | None, wait_s: float
    ) -> None:
        """A model call failed and is retried after `wait_s`; `status`: its HTTP status, if any."""
        self._event(
            "retry", turn=turn, attempt=attempt, reason=reason, status=status, wait_s=wait_s
        )

    def hook(
        self,
        *,
        event: str,
        tool: str | None,
        command: str,
        exit_code: int | None,
        timed_out: bool,
        duration_s: float,
        outcome: str,
        stdout: str,
        stderr: str,
        turn: int,
    ) -> None:
        """One run of a hook: how it ended (`ok`, `blocked`, `rewrote`, `warning`), output tails."""
        self._event(
            "hook",
            turn=turn,
            event=event,
            tool=tool,
            command=command,
            exit_code=exit_code,
            timed_out=timed_out,
            duration_s=duration_s,
            outcome=outcome,
            stdout=stdout,
            stderr=stderr,
        )

    def network(self, *, turn: int, **fields: Any) -> None:
        """One connection through the network allowlist's proxy (DESIGN 19): `host`, `port`,
        `allowed`, `method`, `rule`, `reason`, `bytes_up`, `bytes_down`, `duration_s`."""
        self._event("network", turn=turn, **fields)

    def finding(self, finding: Finding, turn: int) -> None:
        """One accepted `report_finding` call (DESIGN 21), as the reports will show it."""
        self._event("finding", turn=turn, **finding.as_json())

    def grade(self, grade: Grade, turn: int) -> None:
        """A rubric graded a result (DESIGN 27): every criterion with each vote and reason."""
        self._event("grade", turn=turn, **grade.as_json())

    def warning(self, message: str) -> None:
        """Something the operator should know that did not stop the session (e.g. resume drift)."""
        self._event("warning", message=message)

    def end(
        self,
        status: Status,
        reason: str,
        totals: Totals,
        result: str | None = None,
        *,
        kind: str | None = None,
    ) -> None:
        """The last line: how the session ended. Nothing may be written after it."""
        self._event(
            "end",
            status=status,
            reason=reason,
            kind=kind,
            result=result,
            totals=dataclasses.asdict(totals),
        )
        self._ended = True
        self.close()

    def close(self) -> None:
        """Close the file. A log closed without `end` reads as incomplete (and resumable)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            try:
                handle.close()
            except OSError as error:
                raise LogWriteError(self.path, error) from error

    def __enter__(self) -> SessionLogWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _event(self, event_type: str, /, **fields: Any) -> None:
        if self._ended:
            raise RuntimeError(
                f"session log {self.path} already has its end line; writing {event_type} is a bug"
            )
        if self._handle is None:
            raise RuntimeError(f"session log {self.path} is closed; cannot write {event_type}")
        line = {"type": event_type, **fields, "ts": iso_utc(self._clock())}
        self._write(line)

    def _write(self, line: dict[str, Any], keep: tuple[str, ...] = ()) -> None:
        """Write one line, redacted but for the fields in `keep` (ids the runner made)."""
        assert self._handle is not None
        text = json.dumps(line, ensure_ascii=False, default=str)
        if self._redactor.may_be_in_json(text):
            redacted = {**self._redactor.data(line), **{key: line[key] for key in keep}}
            # A value JSON has no form for (a Path, say) is written as its text: mask that too.
            text = json.dumps(redacted, ensure_ascii=False, default=self._masked_text)
        # Readers that split with str.splitlines would break a line at these; JSON may escape them.
        text = text.translate(_LINE_BREAKS)
        try:
            self._handle.write(text + "\n")
            # Flushed per event so that a killed process leaves every earlier event readable;
            # fsync is left to the OS (a crash of the machine, not the process, may lose a tail).
            self._handle.flush()
        except OSError as error:
            raise LogWriteError(self.path, error) from error
        if self._events is not None:
            self._events.record(self._task_name, self.session_id, text)

    def _masked_text(self, value: object) -> str:
        return self._redactor.text(str(value))

    def _spill(self, folder: str, number: int, text: str) -> tuple[str, str | None, int]:
        """(text or its preview, reference of the spill file or None, size in UTF-8 bytes)."""
        redacted = self._redactor.text(text)
        ref = f"{self.session_id}/{folder}/{number}.txt"
        return spill(self.path.parent, ref, redacted, self._result_cap, self._preview)


def _messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as `{role, content}`, with native `tool_calls`/`tool_results` when they have any."""
    return [
        {
            "role": str(m["role"]),
            "content": str(m["content"]),
            **{key: list(m[key]) for key in ("tool_calls", "tool_results") if m.get(key)},
        }
        for m in messages
    ]
