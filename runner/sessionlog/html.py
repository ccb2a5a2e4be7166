"""`log export --format html`: session logs as one self-contained HTML page (DESIGN section 17).

The page has a run overview (a row per task session: status, turns, tokens, cost) and each
session's transcript: messages in full, tool calls folded in `<details>` (so folding works
without script), sub-agent sessions nested under the call that started them, retries,
compactions, checks, hooks and warnings marked. Everything in a log is untrusted, so every string
is HTML-escaped, every text is cut at `MAX_TEXT_CHARS`, and a Content-Security-Policy forbids any
script and any load from anywhere: the page works offline and cannot phone home. Secrets stay as
the log has them (masked when it was written). A task's findings (DESIGN 21) are counted above
its events and marked where they were reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

from runner.sessionlog.children import MAX_NESTING, child_log_path
from runner.sessionlog.reader import SessionRecord, find_sessions, read_session, status_of
from runner.sessionlog.view import _shown_results

__all__ = ["MAX_TEXT_CHARS", "export_html"]

MAX_TEXT_CHARS = 64 * 1024
"""Characters of one text (message, result, output) shown; the rest is named, not shown."""

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem;color:#1b1f24}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin:.2rem 0}
table{border-collapse:collapse}td,th{border:1px solid #ccd;padding:.2rem .5rem;text-align:left}
td.n{text-align:right}tfoot td{font-weight:bold}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:.5rem;margin:.3rem 0}
.session{border:1px solid #ccd;border-radius:6px;padding:.6rem;margin:1rem 0}
.facts{color:#555;font-size:.9em}.facts span{margin-right:1.2rem}
.msg{margin:.6rem 0}.role{font-weight:bold}.assistant .role{color:#0a5}.user .role{color:#05a}
details{margin:.3rem 0}summary{cursor:pointer}
.tool>summary{font-family:monospace}.tool.error>summary{color:#b00}
.mark{padding:.2rem .5rem;margin:.3rem 0;border-left:4px solid #999;background:#fafafa}
.retry{border-color:#d80}.compaction{border-color:#80d}.hook{border-color:#088}
.warning{border-color:#d00}.meta{color:#777;font-size:.85em}.finding{border-color:#c60}
.grade.passed{border-color:#0a5}.grade.failed{border-color:#b00}
.grade td,.grade th{padding:.1rem .4rem;text-align:left;vertical-align:top}
.child{margin-left:1.5rem;border-left:3px solid #05a;padding-left:.6rem}
.st-passed{color:#0a5}.st-failed,.st-error,.st-budget_exceeded,.st-interrupted,.st-incomplete{color:#b00}
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _e(value: object) -> str:
    """`value` as escaped HTML text (quotes too: it may land in an attribute)."""
    return escape(str(value), quote=True)


def _bounded(text: str, where: str = "") -> str:
    """`text` cut at MAX_TEXT_CHARS, saying so and where the whole text is."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    where = f"; the whole text is in {where} beside the log" if where else ""
    note = f"[… cut: the page shows its first {MAX_TEXT_CHARS} characters{where}]"
    return f"{text[:MAX_TEXT_CHARS]}\n{note}"


def _pre(text: str, where: str = "") -> str:
    return f"<pre>{_e(_bounded(text, where))}</pre>"


def _spilled(record: SessionRecord, event: dict[str, Any]) -> tuple[str, str]:
    """A tool result or check output and the spill file it came from (`""` when none), read
    at most MAX_TEXT_CHARS + 1 characters far: a spill file may be huge."""
    call = event.get("type") == "tool_call"
    ref = event.get("result_ref" if call else "output_ref")
    inline = str(event.get("result" if call else "output") or "")
    if not ref:
        return inline, ""
    folder = record.path.parent
    target = folder / str(ref)
    if not target.resolve().is_relative_to(folder.resolve()):
        # A log is an artifact from elsewhere: its references must stay beside it.
        return f"{inline}\n[… not read: the spill reference {ref} leaves the log's folder]", ""
    try:
        with target.open(encoding="utf-8", errors="replace") as file:
            return file.read(MAX_TEXT_CHARS + 1), str(ref)
    except OSError:
        return f"{inline}\n[… the whole text was spilled to {ref}, which is missing]", ""


def _money(value: object) -> str:
    return f"${float(value):.4f}" if isinstance(value, int | float) else "-"


def _secs(value: object) -> str:
    return f"{float(value):.2f}s" if isinstance(value, int | float) else "-"


def _num(value: object) -> float:
    """A number from a log field, 0 for anything else (a log is untrusted: any field may hold
    any JSON value, and the page must still render)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _tokens(totals: dict[str, Any]) -> int:
    return int(_num(totals.get("input_tokens")) + _num(totals.get("output_tokens")))


def _anchor(record: SessionRecord) -> str:
    return "s-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in record.session_id)


def _task_name(record: SessionRecord) -> str:
    """The task's name; for a sub-agent's session (whose header holds its parent's task), the
    agent's name and the task it works for."""
    task = record.header.get("task")
    name = str(task.get("name", "?")) if isinstance(task, dict) else "?"
    call = record.header.get("parent_call")
    if record.header.get("parent_session_id") and isinstance(call, dict) and call.get("agent"):
        return f"{call['agent']} (sub-agent of {name})"
    return name


def _overview(records: list[SessionRecord]) -> str:
    rows = []
    sums = {"turns": 0, "tokens": 0, "cost": 0.0, "calls": 0, "duration": 0.0}
    counts: dict[str, int] = {}
    for record in records:
        status = status_of(record)
        counts[status] = counts.get(status, 0) + 1
        totals = _obj((record.end or {}).get("totals"))
        reason = str((record.end or {}).get("reason", "no end line: the session was cut off"))
        sums["turns"] += int(_num(totals.get("turns")))
        sums["tokens"] += _tokens(totals)
        sums["cost"] += _num(totals.get("cost_usd"))
        sums["calls"] += int(_num(totals.get("tool_calls")))
        sums["duration"] += _num(totals.get("duration_s"))
        rows.append(
            f'<tr><td><a href="#{_anchor(record)}">{_e(_task_name(record))}</a></td>'
            f'<td class="st-{_e(status)}">{_e(status)}</td><td>{_e(reason)}</td>'
            f'<td class="n">{_e(totals.get("turns", "-"))}</td>'
            f'<td class="n">{_tokens(totals)}</td>'
            f'<td class="n">{_money(totals.get("cost_usd"))}</td>'
            f'<td class="n">{_e(totals.get("tool_calls", "-"))}</td>'
            f'<td class="n">{_e(totals.get("duration_s", "-"))}</td></tr>'
        )
    tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return (
        "<h2>Overview</h2><table><thead><tr><th>task</th><th>status</th><th>reason</th>"
        "<th>turns</th><th>tokens</th><th>cost</th><th>tool calls</th><th>seconds</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody><tfoot><tr><td>{len(records)} sessions</td>"
        f'<td>{_e(tally)}</td><td></td><td class="n">{sums["turns"]}</td>'
        f'<td class="n">{sums["tokens"]}</td><td class="n">{_money(sums["cost"])}</td>'
        f'<td class="n">{sums["calls"]}</td><td class="n">{sums["duration"]:.1f}</td></tr>'
        "</tfoot></table>"
    )


def _facts(record: SessionRecord) -> str:
    header = record.header
    facts = [
        ("session", record.session_id),
        ("model", header.get("model", "?")),
        ("started", header.get("started_at", "?")),
        ("task file", header.get("task_file", "?")),
    ]
    if record.parent_id:
        facts.append(("resumed from", record.parent_id))
    call = header.get("parent_call")
    if isinstance(call, dict) and header.get("parent_session_id"):
        facts.insert(0, ("agent", f"{call.get('agent')}, started by {header['parent_session_id']}"))
    network = [bool(e.get("allowed")) for e in record.events if e.get("type") == "network"]
    if network:  # DESIGN 19: every connection through the allowlist proxy
        facts.append(("network", f"{sum(network)} allowed, {len(network) - sum(network)} refused"))
    spans = "".join(f"<span>{_e(name)}: {_e(value)}</span>" for name, value in facts)
    prompt = str(header.get("system_prompt", ""))
    return (
        f'<div class="facts">{spans}</div>'
        f'<details class="prompt"><summary>System prompt</summary>{_pre(prompt)}</details>'
    )


def _end(record: SessionRecord) -> str:
    end = record.end
    if end is None:
        return '<div class="mark warning">no end line: the process stopped before the end</div>'
    totals = _obj(end.get("totals"))
    status = str(end.get("status"))
    line = (
        f'<div class="mark end">End: <b class="st-{_e(status)}">{_e(status)}</b> - '
        f"{_e(end.get('reason', ''))} (turns {_e(totals.get('turns', 0))}, tokens "
        f"{_tokens(totals)}, cost {_money(totals.get('cost_usd'))}, tool calls "
        f"{_e(totals.get('tool_calls', 0))}, {_secs(totals.get('duration_s'))})</div>"
    )
    result = end.get("result")
    if result not in (None, ""):
        text = result if isinstance(result, str) else json.dumps(result, indent=2)
        line += f"<div>Result:</div>{_pre(text)}"
    return line


def _tool_call(record: SessionRecord, event: dict[str, Any], depth: int, seen: set[Path]) -> str:
    failed = bool(event.get("is_error"))
    args = json.dumps(event.get("arguments", {}), ensure_ascii=False)
    preview = " ".join(args.split())
    preview = preview if len(preview) <= 100 else preview[:99] + "…"
    result, where = _spilled(record, event)
    size = event.get("result_bytes")
    html = (
        f'<details class="tool{" error" if failed else ""}"><summary>'
        f"{_e(event.get('tool'))} · {'error' if failed else 'ok'} · "
        f"{_secs(event.get('duration_s'))} · {_e(preview)}</summary>"
        f"<div>Arguments ({_e(event.get('server', ''))}):</div>"
        f"{_pre(json.dumps(event.get('arguments', {}), indent=2, ensure_ascii=False))}"
        f'<div class="result">Result{f" ({size} bytes)" if isinstance(size, int) else ""}:</div>'
        f"{_pre(result, where)}</details>"
    )
    child = child_log_path(record, event)
    if child is not None:
        html += _child(child, depth + 1, seen)
    return html


def _child(path: Path, depth: int, seen: set[Path]) -> str:
    if path.resolve() in seen:  # a log naming itself, or a child named twice: shown once
        return f'<div class="mark warning">sub-agent session {_e(path.stem)}: shown above</div>'
    if depth > MAX_NESTING:
        return f'<div class="mark warning">sub-agent session {_e(path.stem)}: nested too deep</div>'
    if not path.is_file():
        return f'<div class="mark warning">sub-agent session {_e(path.stem)}: no log here</div>'
    return _session(read_session(path), depth, seen, nested=True)


def _network_text(event: dict[str, Any]) -> str:
    where = f"{event.get('method')} {event.get('host')}:{event.get('port')}"
    if not event.get("allowed"):
        return f"network: refused {where} ({event.get('reason')})"
    failed = f", {event.get('reason')}" if event.get("reason") else ""
    return (
        f"network: allowed {where} by rule {event.get('rule')}{failed}: "
        f"{event.get('bytes_up')} bytes up, {event.get('bytes_down')} down, "
        f"{_secs(event.get('duration_s'))}"
    )


def _mark(kind: str, text: str, body: str = "") -> str:
    if body:
        return f'<details class="mark {kind}"><summary>{_e(text)}</summary>{body}</details>'
    return f'<div class="mark {kind}">{_e(text)}</div>'


def _event(
    record: SessionRecord,
    index: int,
    event: dict[str, Any],
    extra: dict[int, str],
    depth: int,
    seen: set[Path],
) -> str:
    kind = event.get("type")
    if kind == "message":
        content = extra.get(index, str(event.get("content", "")))
        if not content:
            return ""  # tool results only: each is shown with its call
        role = str(event.get("role", "?"))
        return (
            f'<div class="msg {_e(role)}"><div class="role">{_e(role.capitalize())} '
            f"(turn {_e(event.get('turn'))})</div>{_pre(content)}</div>"
        )
    if kind == "tool_call":
        return _tool_call(record, event, depth, seen)
    if kind == "model_call":
        usage = _obj(event.get("usage"))
        return (
            f'<div class="meta">model call, turn {_e(event.get("turn"))}: '
            f"{_e(usage.get('input_tokens', 0))} in / {_e(usage.get('output_tokens', 0))} out "
            f"tokens, {_money(event.get('cost_usd'))}, {_secs(event.get('latency_s'))}, "
            f"stop {_e(event.get('stop_reason'))}, retries {_e(event.get('retries', 0))}</div>"
        )
    if kind == "retry":
        return _mark(
            "retry",
            f"retry: attempt {event.get('attempt')} after {event.get('reason')} "
            f"(status {event.get('status')}), waited {_secs(event.get('wait_s'))}",
        )
    if kind == "compaction":
        text = (
            f"context compacted ({event.get('kind')}) at turn {event.get('turn')}: "
            f"{event.get('before_tokens')} -> {event.get('after_tokens')} tokens"
        )
        return _mark("compaction", text, _pre(str(event.get("summary") or "")))
    if kind == "check":
        output, where = _spilled(record, event)
        text = f"check `{event.get('command')}`: exit {event.get('exit_code')}"
        return _mark("check", text, _pre(output, where))
    if kind == "hook":
        on = f" on {event.get('tool')}" if event.get("tool") else ""
        text = (
            f"hook {event.get('event')}{on} `{event.get('command')}`: {event.get('outcome')}, "
            f"exit {event.get('exit_code')}" + (" (timed out)" if event.get("timed_out") else "")
        )
        body = "".join(
            f"<div>{name}:</div>{_pre(str(event.get(name)))}"
            for name in ("stdout", "stderr")
            if event.get(name)
        )
        return _mark("hook", text, body)
    if kind == "network":
        return _mark("network", _network_text(event))
    if kind == "warning":
        return _mark("warning", f"warning: {event.get('message')}")
    if kind == "finding":
        return _finding(event)
    if kind == "grade":
        return _grade(event)
    if kind == "resume":
        messages = event.get("messages") or []
        body = "".join(
            f'<div class="role">{_e(m.get("role"))}</div>{_pre(str(m.get("content", "")))}'
            for m in messages
            if isinstance(m, dict)
        )
        text = f"resumed from {event.get('parent_id')} with {len(messages)} messages"
        return _mark("resume", text, body)
    if kind == "end":
        return ""  # shown after the events
    return _mark("other", f"{kind} event", _pre(json.dumps(event, indent=2, ensure_ascii=False)))


def _finding(event: dict[str, Any]) -> str:
    """A `report_finding` the task accepted: where, how serious, the message and suggestion."""
    line, end = event.get("line"), event.get("end_line")
    where = f"{event.get('path')}:{line}" + (f"-{end}" if end not in (None, line) else "")
    text = f"finding ({event.get('severity')}) {where}: {event.get('title')}"
    body = _pre(str(event.get("message", "")))
    if event.get("suggestion") is not None:
        body += f"<div>suggested replacement:</div>{_pre(str(event.get('suggestion')))}"
    return _mark("finding", text, body)


def _grade(event: dict[str, Any]) -> str:
    """A rubric's grading (DESIGN 27): the verdict, then each criterion with every vote."""
    criteria = [c for c in event.get("criteria") or [] if isinstance(c, dict)]
    passed = sum(1 for c in criteria if c.get("passed"))
    verdict = "passed" if event.get("passed") else "failed"
    text = (
        f"rubric {verdict} (attempt {event.get('attempt')}): {passed} of {len(criteria)} "
        f"criteria, grader {event.get('grader')}, {event.get('votes')} vote(s), "
        f"{_money(event.get('cost_usd'))}"
    )
    rows = "".join(
        f"<tr><td>{_e(c.get('criterion'))}</td><td>{'pass' if c.get('passed') else 'FAIL'}</td>"
        f"<td>{_e(' '.join('pass' if v else 'fail' for v in c.get('votes') or []))}</td>"
        f"<td>{'<br>'.join(_e(r) for r in c.get('reasons') or [])}</td></tr>"
        for c in criteria
    )
    head = "<tr><th>criterion</th><th>verdict</th><th>votes</th><th>reasons</th></tr>"
    return _mark(f"grade {verdict}", text, f"<table>{head}{rows}</table>")


def _findings_count(record: SessionRecord) -> str:
    """`findings: 1 error, 2 warning` above the events, when the session reported any."""
    counts: dict[str, int] = {}
    for event in record.events:
        if event.get("type") == "finding":
            severity = str(event.get("severity"))
            counts[severity] = counts.get(severity, 0) + 1
    if not counts:
        return ""
    listed = ", ".join(f"{n} {severity}" for severity, n in counts.items())
    return f'<div class="mark finding">findings: {_e(listed)}</div>'


def _events(record: SessionRecord, depth: int, seen: set[Path]) -> Iterator[str]:
    extra = _shown_results(record)
    for index, event in enumerate(record.events):
        yield _event(record, index, event, extra, depth, seen)


def _session(record: SessionRecord, depth: int, seen: set[Path], nested: bool = False) -> str:
    seen.add(record.path.resolve())
    status = status_of(record)
    title = (
        f'{_e(_task_name(record))} <span class="st-{_e(status)}">{_e(status)}</span>'
        f' <span class="meta">{_e(record.session_id)}</span>'
    )
    body = _facts(record) + _findings_count(record) + "".join(_events(record, depth, seen))
    body += _end(record)
    if record.torn:
        body += '<div class="mark warning">the last line was torn (killed while writing)</div>'
    if nested:
        return (
            f'<details class="child session" id="{_anchor(record)}" open>'
            f"<summary>sub-agent session: {title}</summary>{body}</details>"
        )
    return f'<section class="session" id="{_anchor(record)}"><h2>{title}</h2>{body}</section>'


def export_html(path: Path) -> str:
    """The log at `path`, or every log of a run folder, as one self-contained HTML page.
    Sub-agent sessions are shown under the call that started them, not on their own."""
    records = [read_session(p) for p in find_sessions(path)]
    ids = {r.session_id for r in records}
    top = [r for r in records if r.header.get("parent_session_id") not in ids]
    seen: set[Path] = set()
    title = f"agent-runner: {len(top)} session{'s' if len(top) != 1 else ''} from {path.name}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>"
        f"<h1>{_e(title)}</h1>{_overview(top)}\n"
        + "\n".join(_session(r, 0, seen) for r in top)
        + "\n</body></html>\n"
    )
