"""Sessions written the same way for the golden files and for the tests that compare against them.

Regenerate the golden files with `UPDATE_GOLDEN=1 .venv/bin/pytest tests/sessionlog`
(see test_golden.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runner.outcome import CriterionGrade, Finding, Grade, Totals
from runner.redact import Redactor
from runner.sessionlog import Header, SessionLogWriter
from runner.toolcall.spec import ToolSpec

SECRET = "sk-test-SECRET-4f9a2c"
"""A fake secret; it appears in every kind of event a scenario writes and never on disk."""
REDACTOR = Redactor([SECRET])
GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDEN_HOST = {
    "os": "Linux 6.0",
    "python": "3.11.0",
    "hostname": "ci-host",
    "user": "runner",
    "cwd": "/work",
}
SMALL_CAP = 256
"""Result cap of the scenarios, so that a spill file shows up in a golden log."""
SMALL_PREVIEW = 64

TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file of the workspace.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        server="workspace",
    ),
    ToolSpec(
        name="attempt_completion",
        description="Finish the task.",
        input_schema={"type": "object", "properties": {"result": {"type": "string"}}},
    ),
]


def fixed_clock() -> Callable[[], datetime]:
    """A clock that starts at 2025-01-01T00:00:00Z and moves 1.5 s per reading."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    ticks: Iterator[int] = iter(range(1_000_000))
    return lambda: start + timedelta(seconds=1.5 * next(ticks))


def header(name: str, *, golden: bool, parent_id: str | None = None) -> Header:
    """A header for task `name`: fixed ids and host for a golden file, the real ones otherwise."""
    task = {
        "name": name,
        "prompt": f"Fix the failing test. The deploy key is {SECRET}.",
        "model": "openai:gpt-4o-mini",
        "limits": {"turns": 20, "cost_usd": 1.0},
        "extensions": {"github": {"envs": {"GITHUB_TOKEN": SECRET}}},
    }
    fields: dict[str, Any] = {}
    if golden:
        fields = {
            "session_id": f"20250101T000000Z-{name}-a1b2c3",
            "host": dict(GOLDEN_HOST),
            "runner_version": "0.1.0",
        }
    return Header(
        run_id="run-golden" if golden else "run-fresh",
        task=task,
        model="openai:gpt-4o-mini",
        system_prompt=f"# ROLE\nYou are a careful engineer.\n\n# TASK\nUse token {SECRET}.\n",
        tools=TOOLS,
        parent_id=parent_id,
        task_file="tasks/fix-test.yaml",
        **fields,
    )


def create(out: Path, name: str, *, golden: bool, parent_id: str | None = None) -> SessionLogWriter:
    return SessionLogWriter.create(
        out,
        header(name, golden=golden, parent_id=parent_id),
        REDACTOR,
        result_cap_bytes=SMALL_CAP,
        preview_bytes=SMALL_PREVIEW,
        clock=fixed_clock() if golden else None,
    )


def _opening(w: SessionLogWriter) -> None:
    w.message("user", f"Fix the failing test. The deploy key is {SECRET}.", 0)
    w.message("assistant", "<read_file><path>tests/test_app.py</path></read_file>", 1)
    w.model_call(
        1,
        latency_s=1.25,
        usage={"input_tokens": 1200, "output_tokens": 40, "cache_read_tokens": 0},
        cost_usd=0.0006,
        retries=0,
        stop_reason="stop",
        model="gpt-4o-mini",
    )
    w.tool_call(
        1,
        tool="read_file",
        server="workspace",
        arguments={"path": "tests/test_app.py", SECRET: "as a key"},
        result=f"def test_app():\n    assert token() == '{SECRET}'\n",
        is_error=False,
        duration_s=0.01,
    )
    w.message("user", f"<result tool='read_file'>assert token() == '{SECRET}'</result>", 1)


def all_events(out: Path, *, golden: bool) -> SessionLogWriter:
    """A resumed session with every event type, a spilled tool result and a spilled check output."""
    w = create(out, "all-events", golden=golden, parent_id="20241231T235959Z-all-events-0f0f0f")
    w.resume(
        "20241231T235959Z-all-events-0f0f0f",
        [
            {"role": "user", "content": f"Fix the failing test. The key is {SECRET}."},
            {"role": "assistant", "content": "I ran out of turns."},
        ],
    )
    w.message("user", "Continue: the last run stopped at its turn limit (turns).", 0)
    w.retry(1, attempt=1, reason=f"HTTP 429 for key {SECRET}", status=429, wait_s=2.0)
    w.message("assistant", "<read_file><path>big.log</path></read_file>", 1)
    w.model_call(
        1,
        latency_s=3.5,
        usage={
            "input_tokens": 900,
            "output_tokens": 12,
            "cache_read_tokens": 300,
            "cache_write_tokens": 50,
            "estimated": True,
        },
        cost_usd=None,
        retries=1,
        stop_reason=None,
        model="gpt-4o-mini",
        request={"system_tokens": 500, "tools_tokens": 250, "messages_tokens": 150},
    )
    w.tool_call(
        1,
        tool="read_file",
        server="workspace",
        arguments={"path": "big.log"},
        result="".join(f"line {i}: token={SECRET} ok\n" for i in range(30)),
        is_error=False,
        duration_s=0.02,
    )
    w.tool_call(
        1,
        tool="read_file",
        server="workspace",
        arguments={"path": "missing.txt"},
        result="error: missing.txt does not exist",
        is_error=True,
        duration_s=0.001,
    )
    w.tool_call(
        1,
        tool="find_tools",
        server="",
        arguments={"query": "issues"},
        result="Loaded: list_issues. Call them as shown: ...",
        is_error=False,
        duration_s=0.0,
        loaded_tools=["list_issues"],
    )
    w.message("user", f"<result tool='read_file'>line 0: token={SECRET} ok ...</result>", 1)
    w.warning(f"the tool list changed since the parent session (key {SECRET})")
    w.finding(
        Finding("src/app.py", 3, 4, "warning", "Key in code", f"key {SECRET}", "x = 1\n", "f0"),
        1,
    )
    w.compaction(
        2,
        kind="clear_tool_results",
        before_tokens=9000,
        after_tokens=4000,
        messages=[
            {"role": "user", "content": f"Fix the failing test. The key is {SECRET}."},
            {"role": "assistant", "content": "I ran out of turns."},
            {
                "role": "user",
                "content": "Continue: the last run stopped at its turn limit (turns).",
            },
            {"role": "assistant", "content": "<read_file><path>big.log</path></read_file>"},
            {"role": "user", "content": "[tool result cleared]"},
        ],
    )
    w.message("assistant", "<attempt_completion><result>done</result></attempt_completion>", 2)
    w.model_call(
        2,
        latency_s=0.75,
        usage={"input_tokens": 4000, "output_tokens": 30},
        cost_usd=0.0006,
        retries=0,
        stop_reason="stop",
        model="gpt-4o-mini",
    )
    w.check(f"pytest -q --token {SECRET}", 1, f"1 failed: token {SECRET}", 1)
    w.check("pytest -q", 0, "".join(f"test_{i} PASSED\n" for i in range(20)), 2)
    w.grade(
        Grade(
            grader="anthropic:claude-sonnet-4-5",
            passed=True,
            criteria=(
                CriterionGrade("Names the test", True, (True, False, True), ("a", "b", "c")),
                CriterionGrade(f"Hides {SECRET}", True, (True,) * 3, (f"no {SECRET}", "ok", "ok")),
            ),
            votes=3,
            pass_rule="all",
            attempt=2,
            cost_usd=0.002,
            total_cost_usd=0.003,
        ),
        2,
    )
    w.hook(
        event="session_end",
        tool=None,
        command="./ci/notify.sh",
        exit_code=0,
        timed_out=False,
        duration_s=0.01,
        outcome="ok",
        stdout=f"sent (token={SECRET})",
        stderr="",
        turn=2,
    )
    w.network(
        turn=2,
        host=f"{SECRET}.exfil.example",  # a command tried to leak a secret in a name
        port=443,
        allowed=False,
        method="CONNECT",
        rule=None,
        reason="not in the allowlist",
        bytes_up=0,
        bytes_down=0,
        duration_s=0.002,
    )
    w.end(
        "passed",
        f"checks passed ({SECRET})",
        Totals(turns=2, input_tokens=4900, output_tokens=42, cost_usd=0.0006, tool_calls=2),
        result=f"Fixed the test; the key {SECRET} was not needed.",
        kind=None,
    )
    return w


def compaction(out: Path, *, golden: bool) -> SessionLogWriter:
    """A session compacted twice: old tool results cleared, then older turns summarised."""
    w = create(out, "compaction", golden=golden)
    _opening(w)
    first = f"Fix the failing test. The deploy key is {SECRET}."
    w.compaction(
        2,
        kind="clear_tool_results",
        before_tokens=9000,
        after_tokens=4000,
        messages=[
            {"role": "user", "content": first},
            {
                "role": "assistant",
                "content": "<read_file><path>tests/test_app.py</path></read_file>",
            },
            {"role": "user", "content": "[tool result cleared]"},
        ],
    )
    w.message("assistant", "<attempt_completion><result>done</result></attempt_completion>", 2)
    w.model_call(
        2,
        latency_s=0.5,
        usage={"input_tokens": 4000, "output_tokens": 20},
        cost_usd=0.0002,
        retries=0,
        stop_reason="stop",
        model="gpt-4o-mini",
    )
    w.message("user", "The success check failed: 1 failed. Keep going.", 2)
    w.compaction(
        3,
        kind="summary",
        before_tokens=7000,
        after_tokens=1500,
        messages=[
            {"role": "user", "content": first},
            {"role": "user", "content": f"Summary: read the test, which compares {SECRET}."},
        ],
        summary=f"Read the test, which compares {SECRET}.",
    )
    w.message("assistant", "I could not fix it.", 3)
    w.model_call(
        3,
        latency_s=0.4,
        usage={"input_tokens": 1500, "output_tokens": 8},
        cost_usd=0.0001,
        retries=0,
        stop_reason="stop",
        model="gpt-4o-mini",
    )
    w.end("failed", "the success check failed", Totals(turns=3, tool_calls=1), kind="check")
    return w


def no_end(out: Path, *, golden: bool) -> SessionLogWriter:
    """A session cut off before its end line (the process died)."""
    w = create(out, "no-end", golden=golden)
    _opening(w)
    w.close()
    return w


TORN_TAIL = '{"type": "model_call", "turn": 2, "model": "gpt-4o-mini", "latency_s": 0.'
"""The start of a line whose writer was killed mid-write."""


def torn_last_line(out: Path, *, golden: bool) -> SessionLogWriter:
    """A session killed while writing a line: the last line is torn."""
    w = create(out, "torn-last-line", golden=golden)
    _opening(w)
    w.close()
    with w.path.open("a", encoding="utf-8") as handle:
        handle.write(TORN_TAIL)
    return w


SCENARIOS: dict[str, Callable[..., SessionLogWriter]] = {
    "all-events": all_events,
    "compaction": compaction,
    "no-end": no_end,
    "torn-last-line": torn_last_line,
}


def lines(path: Path) -> list[dict[str, Any]]:
    """Every whole JSON line of a file (a torn tail is left out)."""
    out = []
    for raw in path.read_text(encoding="utf-8").split("\n"):
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


def normalise(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines with volatile fields (timestamps, ids, host, runner version) replaced."""
    session_id = records[0]["session_id"]
    result = []
    for original in records:
        record = dict(original)
        if "ts" in record:
            record["ts"] = "<ts>"
        if record["type"] == "header":
            record.update(
                session_id="<session>",
                run_id="<run>",
                host="<host>",
                started_at="<ts>",
                runner_version="<version>",
            )
        for key in ("result_ref", "output_ref"):
            if record.get(key):
                record[key] = record[key].replace(session_id, "<session>")
        result.append(record)
    return result
