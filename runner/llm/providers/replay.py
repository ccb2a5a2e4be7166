"""The `replay` provider: plays the assistant messages of a recorded session log, in order.

A replayed session needs no key and no network, and reproduces the recorded replies exactly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import ConfigError, ProviderError
from runner.llm.base import Message, Reply, RetryEvent, Usage
from runner.llm.native import NativeCall, NativeTools, calls_of
from runner.llm.providers.streaming import estimate_usage
from runner.settings import ModelInfo, Settings

__all__ = ["RecordedReply", "ReplayLLM", "create", "read_recording", "resolve_log"]

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True)
class RecordedReply:
    """One assistant message of a session log, with what its model call recorded."""

    text: str
    """The assistant message's content."""
    usage: Usage | None
    """Usage of the `model_call` event after it, if any."""
    stop_reason: str | None
    """Stop reason of that `model_call` event, if any."""
    calls: tuple[NativeCall, ...] = ()
    """The message's native tool calls (a log written in tool_mode native)."""


class ReplayLLM:
    """Plays recorded replies one per call; running out is a `ProviderError`."""

    provider = "replay"

    def __init__(self, path: Path) -> None:
        self.path = resolve_log(path)
        header, self._replies = read_recording(self.path)
        recorded_model = header.get("model")
        self.model = recorded_model if isinstance(recorded_model, str) else str(self.path)
        self.required_tool_mode = "native" if header.get("tool_mode") == "native" else "xml"
        """A replay plays the calls in the form they were recorded: the task runs in that mode."""
        self.native_tools = self.required_tool_mode == "native"
        self.info: ModelInfo | None = None
        self._next = 0

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        tools: NativeTools | None = None,
    ) -> Reply:
        """The next recorded assistant message; see `runner.llm.base.LLM`."""
        started = time.monotonic()
        if self._next >= len(self._replies):
            raise ProviderError(
                f"replay log {self.path} has only {len(self._replies)} assistant messages;"
                f" the session asked for message {self._next + 1}"
            )
        recorded = self._replies[self._next]
        self._next += 1
        usage = recorded.usage or estimate_usage(system, messages, recorded.text)
        return Reply(
            text=recorded.text,
            usage=usage,
            stop_reason=recorded.stop_reason or "end_turn",
            latency_s=time.monotonic() - started,
            retries=0,
            model=self.model,
            calls=recorded.calls if tools is not None else (),
        )


def create(model: str, settings: Settings) -> ReplayLLM:
    """The provider factory the registry calls for `replay:PATH`."""
    if not model:
        raise ConfigError("replay needs a session log: write replay:PATH (a .jsonl file or folder)")
    return ReplayLLM(Path(model))


def resolve_log(path: Path) -> Path:
    """The log file itself, or the one `*.jsonl` in a folder (or in its `sessions/`)."""
    if path.is_dir():
        logs = sorted(path.glob("*.jsonl")) or sorted(path.glob("sessions/*.jsonl"))
        if len(logs) != 1:
            found = ", ".join(p.name for p in logs) or "none"
            raise ConfigError(
                f"replay folder {path} must hold exactly one *.jsonl session log (found: {found});"
                " name the file instead"
            )
        return logs[0]
    if not path.is_file():
        raise ConfigError(f"replay log {path} not found (check the path after replay:)")
    return path


def read_recording(path: Path) -> tuple[dict[str, Any], list[RecordedReply]]:
    """The header and the assistant replies of a session log; a torn last line is ignored."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise ConfigError(f"replay log {path}: cannot read it: {exc.strerror}") from None
    records = _parse_lines(path, lines)
    if not records or records[0].get("type") != "header":
        raise ConfigError(f"replay log {path}:1: not a session log (the first line is no header)")
    replies: list[RecordedReply] = []
    pending: dict[str, Any] | None = None
    for record in records[1:]:
        kind = record.get("type")
        if kind == "message" and record.get("role") == "assistant":
            if pending is not None:
                replies.append(_recorded(pending, None))
            pending = record
        elif kind == "model_call" and pending is not None:
            replies.append(_recorded(pending, record))
            pending = None
    if pending is not None:
        replies.append(_recorded(pending, None))
    return records[0], replies


def _parse_lines(path: Path, lines: list[bytes]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    numbered = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    for index, (number, line) in enumerate(numbered):
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            if index == len(numbered) - 1:
                break  # a process killed mid-write leaves a torn last line, maybe mid-character
            raise ConfigError(f"replay log {path}:{number}: not valid JSON") from None
        if not isinstance(record, dict):
            raise ConfigError(f"replay log {path}:{number}: expected a JSON object")
        records.append(record)
    return records


def _recorded(message: dict[str, Any], call: dict[str, Any] | None) -> RecordedReply:
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    raw = message.get("tool_calls")
    calls = calls_of(raw if isinstance(raw, list) else None)
    if call is None:
        return RecordedReply(text, None, None, calls)
    stop = call.get("stop_reason")
    usage = _usage(call.get("usage"))
    return RecordedReply(text, usage, stop if isinstance(stop, str) else None, calls)


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    counts = {name: raw[name] for name in _USAGE_FIELDS if isinstance(raw.get(name), int)}
    if not counts:
        return None
    return Usage(**counts, estimated=bool(raw.get("estimated", False)))
