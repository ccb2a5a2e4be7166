"""Every field of a log reaches the HTML page escaped: a log is an artifact from elsewhere, so a
hostile string in any field (a task name, a role, a session id, a hook's command, a number's
place) stays text and never becomes markup (DESIGN section 17)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from runner.sessionlog import export_html

H = object()
"""A leaf of the log templates below that gets a hostile string."""

PARENT: list[dict[str, Any]] = [
    {
        "type": "header",
        "version": 1,
        "session_id": H,
        "parent_id": H,
        "parent_session_id": H,
        "parent_call": {"agent": H, "turn": H, "index": H, "task": H},
        "task": {"name": H},
        "model": H,
        "started_at": H,
        "task_file": H,
        "system_prompt": H,
    },
    {"type": "message", "role": H, "content": H, "turn": H},
    {
        "type": "model_call",
        "turn": H,
        "usage": {"input_tokens": H, "output_tokens": H},
        "cost_usd": H,
        "latency_s": H,
        "stop_reason": H,
        "retries": H,
    },
    {
        "type": "tool_call",
        "tool": H,
        "server": H,
        "arguments": {"path": H},
        "result": H,
        "is_error": True,
        "duration_s": H,
        "result_bytes": H,
        "child_session_id": "child-1",
    },
    {"type": "message", "role": "user", "content": H, "turn": H},
    {"type": "retry", "attempt": H, "reason": H, "status": H, "wait_s": H},
    {
        "type": "compaction",
        "kind": H,
        "turn": H,
        "before_tokens": H,
        "after_tokens": H,
        "summary": H,
        "messages": [],
    },
    {"type": "check", "command": H, "exit_code": H, "output": H},
    {
        "type": "hook",
        "event": H,
        "tool": H,
        "command": H,
        "outcome": H,
        "exit_code": H,
        "timed_out": True,
        "stdout": H,
        "stderr": H,
    },
    {
        "type": "network",
        "allowed": True,
        "method": H,
        "host": H,
        "port": H,
        "rule": H,
        "reason": H,
        "bytes_up": H,
        "bytes_down": H,
        "duration_s": H,
    },
    {"type": "network", "allowed": False, "method": H, "host": H, "port": H, "reason": H},
    {"type": "warning", "message": H},
    {
        "type": "finding",
        "path": H,
        "line": H,
        "end_line": H,
        "severity": H,
        "title": H,
        "message": H,
        "suggestion": H,
    },
    {
        "type": "grade",
        "grader": H,
        "passed": H,
        "votes": H,
        "attempt": H,
        "cost_usd": H,
        "criteria": [{"criterion": H, "passed": H, "votes": [H, False], "reasons": [H, H]}, H],
    },
    {"type": "resume", "parent_id": H, "messages": [{"role": H, "content": H}]},
    {"type": H, "payload": H},
    {
        "type": "end",
        "status": H,
        "reason": H,
        "result": H,
        "totals": {"turns": H, "tool_calls": H, "duration_s": H, "cost_usd": H},
    },
]
"""A top-level session with every event type, every string-like field hostile."""

MARKUP = ["<q>", '"><q x="', "'><q x='", "</pre><q>", '<q onclick="x">', "-->&<q", "<Q/>"]
HOSTILE = st.builds(
    lambda before, markup, after: before + markup + after,
    st.text(max_size=6),
    st.sampled_from(MARKUP),
    st.text(max_size=6),
)
ATTRIBUTES = {"class", "id", "href", "lang", "charset", "http-equiv", "content", "name", "open"}


def fill(template: Any, draw: Any) -> Any:
    if template is H:
        return draw(HOSTILE)
    if isinstance(template, dict):
        return {key: fill(value, draw) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, draw) for value in template]
    return template


class Attributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.names.update(name for name, _ in attrs)


# No shrinking: a failing example of ~150 draws shrinks for minutes; the first one says enough.
@settings(max_examples=25, derandomize=True, deadline=None, phases=[Phase.generate], database=None)
@given(st.data())
def test_a_hostile_string_in_any_field_of_a_log_stays_text(data: st.DataObject) -> None:
    parent = fill(PARENT, data.draw)
    child = fill(PARENT, data.draw)
    parent[0]["parent_session_id"] += "-elsewhere"  # not in the folder: a top-level session
    child[0]["session_id"] = "child-1"
    child[0]["parent_session_id"] = parent[0]["session_id"]
    with TemporaryDirectory() as folder:
        for name, lines in (("a-parent", parent), ("child-1", child)):
            text = "".join(json.dumps(line) + "\n" for line in lines)
            (Path(folder) / f"{name}.jsonl").write_text(text, encoding="utf-8")
        html = export_html(Path(folder))
    assert "<q" not in html.lower()
    page = Attributes()
    page.feed(html)
    assert page.names <= ATTRIBUTES
    assert "q" not in page.tags
    # The sub-agent's session is shown under its call, fields escaped as the parent's are.
    assert 'id="s-child-1"' in html
