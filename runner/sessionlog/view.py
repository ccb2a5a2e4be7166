"""`log show` and `log export`: a session log as a transcript, markdown, or one JSON document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.sessionlog.children import MAX_NESTING, child_log_path, indented
from runner.sessionlog.format import LogReadError
from runner.sessionlog.reader import SessionRecord, find_sessions, read_session, spilled_text

__all__ = ["export_json", "export_markdown", "show_text"]

_FOLD = 100  # characters of a tool call or result kept on its one line when folded


def _one_line(text: str, limit: int = _FOLD) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _full_result(record: SessionRecord, event: dict[str, Any]) -> str:
    if event.get("result_ref"):
        return spilled_text(record.path, event)
    return str(event.get("result", ""))


def _shown_results(record: SessionRecord) -> dict[int, str]:
    """For each tool-results message (by event index): what it holds beyond the results its
    tool_call lines already show (call errors, notes), often nothing. Each result is shown once,
    with its call."""
    from runner.toolcall import ToolResult, render_result

    left: dict[int, str] = {}
    pending: list[dict[str, Any]] = []
    for index, event in enumerate(record.events):
        kind = event.get("type")
        if kind == "tool_call":
            pending.append(event)
        elif kind == "message":
            if event.get("tool_calls") or event.get("tool_results"):
                left[index] = _native_text(event, pending)
            elif pending and event.get("role") == "user":
                content = str(event.get("content", ""))
                for call in pending:
                    block = render_result(
                        str(call.get("tool")),
                        ToolResult(_full_result(record, call), bool(call.get("is_error"))),
                    )
                    content = content.replace(block, "", 1)
                left[index] = "\n\n".join(p for p in content.split("\n\n") if p.strip())
            pending = []
    return left


def _native_text(event: dict[str, Any], ran: list[dict[str, Any]]) -> str:
    """A native message as shown: its text, the calls no tool_call line shows (the completion),
    and the results of calls that did not run (malformed arguments, calls cut off)."""
    shown = {call.get("call_id") for call in ran}
    parts = [str(event.get("content", ""))]
    for call in event.get("tool_calls") or []:
        if isinstance(call, dict) and call.get("name") == "attempt_completion":
            parts.append(f"[call attempt_completion] {call.get('arguments', '')}")
    for result in event.get("tool_results") or []:
        if isinstance(result, dict) and result.get("id") not in shown:
            parts.append(str(result.get("content", "")))
    return "\n\n".join(part for part in parts if part.strip())


def _header_lines(record: SessionRecord) -> list[str]:
    header = record.header
    task = header.get("task") or {}
    lines = [
        f"session {record.session_id}"
        + (f" (resumed from {record.parent_id})" if record.parent_id else ""),
        f"task    {task.get('name', '?')} ({header.get('task_file', '?')})",
        f"model   {header.get('model', '?')}",
        f"started {header.get('started_at', '?')}",
    ]
    call = header.get("parent_call")
    if isinstance(call, dict) and header.get("parent_session_id"):  # a sub-agent's session
        lines.insert(
            1,
            f"agent   {call.get('agent')}, started by {header['parent_session_id']} "
            f"(turn {call.get('turn')}, sub_agent call {call.get('index')})",
        )
    if record.torn:
        lines.append("note    the last line was torn (the process was killed while writing it)")
    return lines


def _end_line(record: SessionRecord) -> str:
    end = record.end
    if end is None:
        return "END: no end record (the process stopped before the session finished)"
    totals = end.get("totals") or {}
    tokens = int(totals.get("input_tokens", 0)) + int(totals.get("output_tokens", 0))
    return (
        f"END: {end.get('status')} - {end.get('reason', '')} "
        f"(turns={totals.get('turns', 0)} tokens={tokens} "
        f"cost=${float(totals.get('cost_usd', 0)):.4f})"
    )


def _events(record: SessionRecord, verbose: bool, depth: int = 0) -> Iterator[str]:
    results = _shown_results(record)
    for index, event in enumerate(record.events):
        kind = event.get("type")
        if kind == "message":
            role = str(event.get("role", "?")).upper()
            content = results.get(index, str(event.get("content", "")))
            if not content:
                continue  # tool results only: each is shown with its tool_call line
            yield f"--- {role} (turn {event.get('turn')}) ---\n{content}"
        elif kind == "tool_call":
            status = "error" if event.get("is_error") else "ok"
            args = json.dumps(event.get("arguments", {}), ensure_ascii=False)
            if verbose:
                yield (
                    f"[tool {event.get('tool')} {status} {event.get('duration_s', 0)}s] {args}\n"
                    f"{_full_result(record, event)}"
                )
            else:
                yield (
                    f"[tool {event.get('tool')} {status}] {_one_line(args, 60)} -> "
                    f"{_one_line(str(event.get('result', '')))}"
                )
            child = child_log_path(record, event)
            if child is not None:
                yield _child_text(child, verbose, depth + 1)
        elif kind == "check":
            yield f"[check `{event.get('command')}` exit {event.get('exit_code')}]" + (
                f"\n{event.get('output', '')}" if verbose else ""
            )
        elif kind == "retry":
            yield (
                f"[retry attempt {event.get('attempt')}: {event.get('reason')}; "
                f"waited {event.get('wait_s')}s]"
            )
        elif kind == "compaction":
            yield (
                f"[compaction {event.get('kind')}: "
                f"{event.get('before_tokens')} -> {event.get('after_tokens')} tokens]"
            )
        elif kind == "warning":
            yield f"[warning] {event.get('message')}"
        elif kind == "hook":
            on = f" {event.get('tool')}" if event.get("tool") else ""
            yield (
                f"[hook {event.get('event')}{on} `{event.get('command')}`: {event.get('outcome')}, "
                f"exit {event.get('exit_code')}]"
            ) + (f"\n{event.get('stderr') or event.get('stdout') or ''}" if verbose else "")
        elif kind == "network":  # DESIGN 19: a connection through the allowlist proxy
            verdict = "allowed" if event.get("allowed") else f"refused: {event.get('reason')}"
            where = f"{event.get('method')} {event.get('host')}:{event.get('port')}"
            yield f"[network {where} {verdict}]"
        elif kind == "resume":
            count = len(event.get("messages") or [])
            yield f"[resumed from {event.get('parent_id')} with {count} messages]"


def show_text(path: Path, verbose: bool = False, depth: int = 0) -> str:
    """A plain-text transcript; tool calls and results are one line each unless `verbose`.
    A sub-agent's session is shown indented under the call that started it. A folder (a run's
    `--out`, or its `sessions/`) shows each of its sessions in turn."""
    if path.is_dir() and depth == 0:
        return _show_folder(path, verbose)
    record = read_session(path)
    parts = ["\n".join(_header_lines(record)), *_events(record, verbose, depth), _end_line(record)]
    return "\n\n".join(parts) + "\n"


def _show_folder(folder: Path, verbose: bool) -> str:
    """Every session of a folder but sub-agents' (shown under their parents), oldest first."""
    records = [read_session(path) for path in find_sessions(folder)]
    ids = {record.session_id for record in records}
    top = [r for r in records if r.header.get("parent_session_id") not in ids]
    if not top:
        raise LogReadError(folder, "no session logs here (pass a .jsonl log or a run's --out)")
    return "\n".join(
        f"=== {record.path.name} ===\n\n{show_text(record.path, verbose)}" for record in top
    )


def _one_log(path: Path, format_name: str) -> Path:
    """`path`, which must be one log file: only the html export takes a folder."""
    if path.is_dir():
        raise LogReadError(
            path, f"--format {format_name} exports one log file; only html takes a folder"
        )
    return path


def _child_text(path: Path, verbose: bool, depth: int) -> str:
    if depth > MAX_NESTING:
        return indented(f"(sub-agent session {path.stem}: nested too deep to show here)")
    if not path.is_file():
        return indented(f"(sub-agent session {path.stem}: its log is not beside this one)")
    return indented(show_text(path, verbose, depth))


def export_markdown(path: Path, depth: int = 0) -> str:
    """The whole session as markdown: header facts, each message, each tool call in full."""
    record = read_session(_one_log(path, "markdown") if depth == 0 else path)
    lines = [f"# Session {record.session_id}", ""]
    lines += [
        f"- {line.split(maxsplit=1)[0]}: {line.split(maxsplit=1)[1]}"
        for line in _header_lines(record)
    ]
    results = _shown_results(record)
    for index, event in enumerate(record.events):
        kind = event.get("type")
        if kind == "message":
            content = results.get(index, str(event.get("content", "")))
            if not content:
                continue  # tool results only: each is under its tool call below
            lines += [
                "",
                f"## {str(event.get('role', '')).capitalize()} (turn {event.get('turn')})",
                "",
                _fenced(content),
            ]
        elif kind == "tool_call":
            lines += [
                "",
                f"### Tool `{event.get('tool')}`" + (" (error)" if event.get("is_error") else ""),
                "",
                "Arguments:",
                "",
                _fenced(json.dumps(event.get("arguments", {}), indent=2), "json"),
                "",
                "Result:",
                "",
                _fenced(_full_result(record, event)),
            ]
            child = child_log_path(record, event)
            if child is not None and child.is_file() and depth < MAX_NESTING:
                nested = export_markdown(child, depth + 1).rstrip("\n")
                lines += ["", "\n".join(f"> {line}".rstrip() for line in nested.split("\n"))]
        elif kind == "check":
            lines += [
                "",
                f"### Check `{event.get('command')}`: exit {event.get('exit_code')}",
                "",
                _fenced(str(event.get("output", ""))),
            ]
    lines += ["", "## End", "", _end_line(record).removeprefix("END: ")]
    return "\n".join(lines) + "\n"


def _fenced(text: str, language: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"  # a longer fence than any run of backticks inside keeps the block intact
    return f"{fence}{language}\n{text}\n{fence}"


def export_json(path: Path) -> str:
    """One JSON document: the header, every event (spilled results inlined) and the end; a
    sub_agent call's event holds its child's document under `child`."""
    return json.dumps(_document(_one_log(path, "json"), 0), indent=2, ensure_ascii=False) + "\n"


def _document(path: Path, depth: int) -> dict[str, Any]:
    record = read_session(path)
    events = []
    for event in record.events:
        if event.get("type") == "tool_call" and event.get("result_ref"):
            event = {**event, "result": _full_result(record, event)}  # noqa: PLW2901
        child = child_log_path(record, event) if event.get("type") == "tool_call" else None
        if child is not None and child.is_file() and depth < MAX_NESTING:
            event = {**event, "child": _document(child, depth + 1)}  # noqa: PLW2901
        events.append(event)
    return {"header": record.header, "events": events, "end": record.end, "torn": record.torn}
