"""What the HTML page says about a log (DESIGN section 17, docs/html-report.md), read in-process
from hand-written logs: the overview's rows and sums, each session's facts, events and end, tool
calls' one-line previews, sub-agent sessions nested under their calls and bounded, spill files read
back, and every text cut at 64 Ki characters."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runner.sessionlog import export_html
from runner.sessionlog.children import MAX_NESTING

SHOWN = 64 * 1024
"""docs/html-report.md: each text shown is cut at 64 Ki characters."""


def write_log(folder: Path, name: str, events: list[dict[str, Any]], **header: Any) -> Path:
    """`<folder>/<name>.jsonl`: a header (session id and task name `name` unless given), events."""
    folder.mkdir(parents=True, exist_ok=True)
    head = {"type": "header", "version": 1, "session_id": name, "task": {"name": name}, **header}
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [head, *events]), encoding="utf-8")
    return path


def end(status: str = "passed", reason: str = "done", **totals: Any) -> dict[str, Any]:
    return {"type": "end", "status": status, "reason": reason, "totals": totals}


def call(tool: str = "read_file", **fields: Any) -> dict[str, Any]:
    return {"type": "tool_call", "tool": tool, "server": "workspace", "arguments": {}, **fields}


def cells(row: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", row)


def test_the_overview_has_a_row_per_session_and_sums_their_totals(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5, "duration_s": 1.2}
    write_log(run, "a-first", [end(turns=2, tool_calls=3, **first)])
    second = {"input_tokens": 7, "output_tokens": 3, "cost_usd": 0.25, "duration_s": 2.5}
    write_log(run, "b-second", [end("failed", "checks failed", turns=3, tool_calls=1, **second)])
    write_log(run, "c-cut", [])
    html = export_html(run)
    assert "<title>agent-runner: 3 sessions from run</title>" in html
    body, foot = html.split("</table>", 1)[0].split("<tbody>")[1].split("<tfoot>")
    rows = re.findall(r"<tr>(.*?)</tr>", body)
    assert [cells(row) for row in rows] == [
        ['<a href="#s-a-first">a-first</a>', "passed", "done", "2", "120", "$0.5000", "3", "1.2"],
        [
            '<a href="#s-b-second">b-second</a>',
            "failed",
            "checks failed",
            "3",
            "10",
            "$0.2500",
            "1",
            "2.5",
        ],
        [
            '<a href="#s-c-cut">c-cut</a>',
            "incomplete",
            "no end line: the session was cut off",
            "-",
            "0",
            "-",
            "-",
            "-",
        ],
    ]
    assert cells(foot) == [
        "3 sessions",
        "1 failed, 1 incomplete, 1 passed",
        "",
        "5",
        "130",
        "$0.7500",
        "4",
        "3.7",
    ]


def test_a_session_links_from_the_overview_to_its_section_by_a_safe_anchor(
    tmp_path: Path,
) -> None:
    log = write_log(tmp_path, "plain", [end()], session_id="2026 run/a-b_c")
    html = export_html(log)
    assert '<a href="#s-2026_run_a-b_c">' in html
    assert '<section class="session" id="s-2026_run_a-b_c">' in html
    assert "<title>agent-runner: 1 session from plain.jsonl</title>" in html


def test_a_sessions_facts_name_its_model_start_task_file_prompt_and_network(
    tmp_path: Path,
) -> None:
    network = [
        {"type": "network", "allowed": True, "method": "GET", "host": "api.example", "port": 443,
         "rule": "api", "bytes_up": 10, "bytes_down": 20, "duration_s": 0.5},
        {"type": "network", "allowed": True, "method": "GET", "host": "api.example", "port": 443,
         "rule": "api", "reason": "reset by peer", "bytes_up": 1, "bytes_down": 0,
         "duration_s": 0.25},
        {"type": "network", "allowed": False, "method": "CONNECT", "host": "evil.example",
         "port": 22, "reason": "not in the allowlist"},
    ]  # fmt: skip
    header = {"model": "gpt-x", "started_at": "2026-01-01T10:00:00Z", "task_file": "t.yaml"}
    log = write_log(
        tmp_path,
        "facts",
        [*network, end()],
        parent_id="older",
        system_prompt="You review.",
        **header,
    )
    html = export_html(log)
    facts = re.search(r'<div class="facts">(.*?)</div>', html)
    assert facts is not None
    assert re.findall(r"<span>(.*?)</span>", facts.group(1)) == [
        "session: facts",
        "model: gpt-x",
        "started: 2026-01-01T10:00:00Z",
        "task file: t.yaml",
        "resumed from: older",
        "network: 2 allowed, 1 refused",
    ]
    assert "<summary>System prompt</summary><pre>You review.</pre>" in html
    assert "network: allowed GET api.example:443 by rule api: 10 bytes up, 20 down, 0.50s" in html
    assert "by rule api, reset by peer: 1 bytes up, 0 down, 0.25s" in html
    assert "network: refused CONNECT evil.example:22 (not in the allowlist)" in html


def test_the_end_shows_status_totals_and_the_result(tmp_path: Path) -> None:
    totals = {"input_tokens": 7, "output_tokens": 3, "cost_usd": 0.25, "duration_s": 2.5}
    finished = end("failed", "checks failed", turns=3, tool_calls=1, **totals)
    log = write_log(tmp_path, "ended", [{**finished, "result": {"answer": 42}}])
    html = export_html(log)
    assert (
        '<div class="mark end">End: <b class="st-failed">failed</b> - checks failed (turns 3, '
        "tokens 10, cost $0.2500, tool calls 1, 2.50s)</div>"
        "<div>Result:</div><pre>{\n  &quot;answer&quot;: 42\n}</pre>"
    ) in html
    quiet = write_log(tmp_path, "quiet", [{**end(), "result": ""}])
    assert "Result:" not in export_html(quiet)
    texted = write_log(tmp_path, "texted", [{**end(), "result": "All good."}])
    assert "<div>Result:</div><pre>All good.</pre>" in export_html(texted)


def test_a_log_cut_off_shows_what_it_has_and_says_so(tmp_path: Path) -> None:
    log = write_log(
        tmp_path, "cut", [{"type": "message", "role": "user", "content": "Go.", "turn": 0}]
    )
    with log.open("a", encoding="utf-8") as file:
        file.write('{"type": "model_call", "tur')
    html = export_html(log)
    assert "<span>session: cut</span>" in html and "<pre>Go.</pre>" in html
    assert "no end line: the process stopped before the end" in html
    assert "the last line was torn (killed while writing)" in html


def test_messages_show_role_and_turn_and_each_tool_result_once_with_its_call(
    tmp_path: Path,
) -> None:
    events = [
        {"type": "message", "role": "assistant", "content": "<read_file/>", "turn": 1},
        call(result="FILE-TEXT", is_error=False),
        {"type": "message", "role": "user", "turn": 1,
         "content": "[read_file] Result:\nFILE-TEXT\n\nNote: one call per turn."},
        {"type": "message", "role": "user", "turn": 2, "content": ""},
        end(),
    ]  # fmt: skip
    html = export_html(write_log(tmp_path, "talk", events))
    assert '<div class="msg assistant"><div class="role">Assistant (turn 1)</div>' in html
    assert html.count("FILE-TEXT") == 1
    assert '<div class="role">User (turn 1)</div><pre>Note: one call per turn.</pre>' in html
    assert "(turn 2)" not in html


def test_a_tool_calls_summary_previews_its_arguments_on_one_line_of_100_characters(
    tmp_path: Path,
) -> None:
    events = [
        call("run_command", arguments={"command": "ls   -la café"}, result="x", is_error=True,
             duration_s=0.5, result_bytes=12),
        call(arguments={"text": "y" * 88}, result="x"),
        call(arguments={"text": "z" * 89}, result="x"),
    ]  # fmt: skip
    html = export_html(write_log(tmp_path, "calls", [*events, end()]))
    summaries = re.findall(r"<summary>(.*?)</summary>", html)
    assert "run_command · error · 0.50s · {&quot;command&quot;: &quot;ls -la café&quot;}" in (
        summaries
    )
    assert f"read_file · ok · - · {{&quot;text&quot;: &quot;{'y' * 88}&quot;}}" in summaries
    assert f"read_file · ok · - · {{&quot;text&quot;: &quot;{'z' * 89}…" in summaries
    assert '<details class="tool error">' in html
    assert "<pre>{\n  &quot;command&quot;: &quot;ls   -la café&quot;\n}</pre>" in html
    assert "<div>Arguments (workspace):</div>" in html
    assert '<div class="result">Result (12 bytes):</div><pre>x</pre>' in html
    assert '<div class="result">Result:</div><pre>x</pre>' in html


def test_a_sub_agents_session_is_shown_under_the_call_that_started_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    started = call("sub_agent", result="LOOKS-FINE", child_session_id="child-1")
    write_log(run, "parent", [started, end()], task={"name": "review"})
    reply = {"type": "message", "role": "assistant", "content": "CHILD-REPLY", "turn": 1}
    write_log(
        run,
        "child-1",
        [reply, end()],
        task={"name": "review"},
        parent_session_id="parent",
        parent_call={"agent": "reviewer", "turn": 1, "index": 0},
    )
    html = export_html(run)
    assert "<title>agent-runner: 1 session from run</title>" in html
    assert html.count("<tr><td>") == 2  # the parent's row and the footer
    nested = (
        '<details class="child session" id="s-child-1" open><summary>sub-agent session: '
        'reviewer (sub-agent of review) <span class="st-passed">passed</span> '
        '<span class="meta">child-1</span></summary>'
        '<div class="facts"><span>agent: reviewer, started by parent</span><span>session: child-1'
    )
    assert nested in html
    assert html.index("LOOKS-FINE") < html.index(nested) < html.index("CHILD-REPLY")
    assert html.index("CHILD-REPLY") < html.rindex('<div class="mark end">')


def test_sub_agent_sessions_nest_to_a_bound_and_each_is_shown_once(tmp_path: Path) -> None:
    chain = [f"c{n}" for n in range(1, MAX_NESTING + 2)]
    parents = ["root", *chain]
    for me, child in zip(parents, [*chain, None], strict=True):
        events = [call("sub_agent", child_session_id=child)] if child else []
        parent = {} if me == "root" else {"parent_session_id": parents[parents.index(me) - 1]}
        write_log(tmp_path, me, [*events, call("sub_agent", child_session_id="ghost"), end()],
                  **parent)  # fmt: skip
    write_log(tmp_path, "loop", [call("sub_agent", child_session_id="loop"), end()])
    html = export_html(tmp_path)
    for name in chain[:MAX_NESTING]:
        assert f'<details class="child session" id="s-{name}" open>' in html
    last = chain[MAX_NESTING]
    assert f'id="s-{last}"' not in html
    assert f"sub-agent session {last}: nested too deep" in html
    assert html.count("sub-agent session ghost: no log here") == MAX_NESTING  # root's to c4's
    assert html.count("sub-agent session loop: shown above") == 1


def test_events_are_marked_with_what_happened(tmp_path: Path) -> None:
    events = [
        {"type": "model_call", "turn": 2, "usage": {"input_tokens": 100, "output_tokens": 20},
         "cost_usd": 0.001, "latency_s": 0.5, "stop_reason": "end_turn", "retries": 1},
        {"type": "retry", "attempt": 2, "reason": "HTTP 429", "status": 429, "wait_s": 1.5},
        {"type": "compaction", "kind": "summary", "turn": 4, "before_tokens": 9000,
         "after_tokens": 1200, "summary": "SUMMARY", "messages": []},
        {"type": "check", "command": "pytest -q", "exit_code": 1, "output": "1 failed"},
        {"type": "hook", "event": "pre_tool", "tool": "write_file", "command": "./guard.sh",
         "outcome": "block", "exit_code": 2, "timed_out": True, "stdout": "OUT", "stderr": ""},
        {"type": "hook", "event": "session_end", "command": "./notify.sh", "outcome": "ok",
         "exit_code": 0},
        {"type": "warning", "message": "the tool list changed"},
        {"type": "resume", "parent_id": "p-1",
         "messages": ["junk", {"role": "user", "content": "BEFORE"}]},
        {"type": "mystery", "note": "café"},
        end(),
    ]  # fmt: skip
    html = export_html(write_log(tmp_path, "marks", events))
    assert (
        '<div class="meta">model call, turn 2: 100 in / 20 out tokens, $0.0010, 0.50s, '
        "stop end_turn, retries 1</div>"
    ) in html
    assert (
        '<div class="mark retry">retry: attempt 2 after HTTP 429 (status 429), waited 1.50s</div>'
    ) in html
    assert (
        '<details class="mark compaction"><summary>context compacted (summary) at turn 4: '
        "9000 -&gt; 1200 tokens</summary><pre>SUMMARY</pre></details>"
    ) in html
    assert (
        '<details class="mark check"><summary>check `pytest -q`: exit 1</summary>'
        "<pre>1 failed</pre></details>"
    ) in html
    assert (
        '<details class="mark hook"><summary>hook pre_tool on write_file `./guard.sh`: block, '
        "exit 2 (timed out)</summary><div>stdout:</div><pre>OUT</pre></details>"
    ) in html
    assert '<div class="mark hook">hook session_end `./notify.sh`: ok, exit 0</div>' in html
    assert '<div class="mark warning">warning: the tool list changed</div>' in html
    assert (
        '<details class="mark resume"><summary>resumed from p-1 with 2 messages</summary>'
        '<div class="role">user</div><pre>BEFORE</pre></details>'
    ) in html
    assert (
        '<details class="mark other"><summary>mystery event</summary>'
        "<pre>{\n  &quot;type&quot;: &quot;mystery&quot;,\n  &quot;note&quot;: &quot;café&quot;\n}"
        "</pre></details>"
    ) in html


def test_findings_are_counted_in_report_order_and_show_their_lines(tmp_path: Path) -> None:
    def finding(severity: str, line: int, end_line: int | None, **more: Any) -> dict[str, Any]:
        return {"type": "finding", "path": "a.py", "line": line, "end_line": end_line,
                "severity": severity, "title": "T", "message": "M", **more}  # fmt: skip

    events = [
        finding("warning", 3, 3, suggestion="", message="Unused."),
        finding("error", 3, 5),
        finding("warning", 7, None, suggestion=None),
        end(),
    ]
    html = export_html(write_log(tmp_path, "review", events))
    assert '<div class="mark finding">findings: 2 warning, 1 error</div>' in html
    assert (
        "<summary>finding (warning) a.py:3: T</summary><pre>Unused.</pre>"
        "<div>suggested replacement:</div><pre></pre></details>"
    ) in html
    assert "<summary>finding (error) a.py:3-5: T</summary>" in html
    assert "<summary>finding (warning) a.py:7: T</summary>" in html
    assert html.count("<div>suggested replacement:</div><pre></pre>") == 1


def test_spilled_outputs_are_read_back_even_when_broken_or_missing(tmp_path: Path) -> None:
    (tmp_path / "spill").mkdir()
    (tmp_path / "spill" / "broken.txt").write_bytes(b"ok \xff end")
    events = [
        call(result="PREVIEW-1", result_ref="spill/broken.txt"),
        {"type": "check", "command": "make", "exit_code": 2, "output": "PREVIEW-2",
         "output_ref": "spill/gone.txt"},
        end(),
    ]  # fmt: skip
    html = export_html(write_log(tmp_path, "spilled", events))
    assert "<pre>ok \ufffd end</pre>" in html and "PREVIEW-1" not in html
    missing = "[… the whole text was spilled to spill/gone.txt, which is missing]"
    assert f"<pre>PREVIEW-2\n{missing}</pre>" in html


def test_a_text_of_64_ki_characters_is_shown_whole_and_a_longer_one_is_cut(
    tmp_path: Path,
) -> None:
    (tmp_path / "spill").mkdir()
    (tmp_path / "spill" / "whole.txt").write_text("w" * (SHOWN - 3) + "END", encoding="utf-8")
    (tmp_path / "spill" / "big.txt").write_text("b" * (SHOWN - 1) + "BIG-OVER", encoding="utf-8")
    events = [
        {"type": "message", "role": "user", "content": "m" * (SHOWN - 4) + "LAST", "turn": 0},
        {"type": "message", "role": "user", "content": "n" * (SHOWN - 1) + "KOVER", "turn": 0},
        call(result="preview", result_ref="spill/whole.txt"),
        call(result="preview", result_ref="spill/big.txt"),
        end(),
    ]
    html = export_html(write_log(tmp_path, "long", events))
    assert "mLAST</pre>" in html and "wEND</pre>" in html
    assert f"nK\n[… cut: the page shows its first {SHOWN} characters]</pre>" in html
    assert (
        f"bB\n[… cut: the page shows its first {SHOWN} characters; the whole text is in "
        "spill/big.txt beside the log]</pre>"
    ) in html
    assert "OVER" not in html and html.count("[… cut") == 2
