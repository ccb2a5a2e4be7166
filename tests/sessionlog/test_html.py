"""`log export --format html` on logs with every event type, a huge spill and a torn tail."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from runner.outcome import Totals
from runner.sessionlog.html import MAX_TEXT_CHARS
from tests.sessionlog.scenarios import SECRET, all_events, compaction, create, torn_last_line


def _export(run_cli, log: Path, out: Path) -> str:
    result = run_cli("log", "export", "--format", "html", str(log), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out.read_text(encoding="utf-8")


def test_every_event_type_is_shown_and_marked(run_cli, tmp_path):
    writer = all_events(tmp_path / "run", golden=False)
    html = _export(run_cli, writer.path, tmp_path / "page.html")
    assert SECRET not in html
    assert "resumed from 20241231T235959Z-all-events-0f0f0f with 2 messages" in html
    assert "retry: attempt 1 after HTTP 429 for key *** (status 429), waited 2.00s" in html
    assert "context compacted (clear_tool_results) at turn 2: 9000 -&gt; 4000 tokens" in html
    assert "warning: the tool list changed" in html
    assert "check `pytest -q --token ***`: exit 1" in html
    assert "hook session_end `./ci/notify.sh`: ok, exit 0" in html
    assert "read_file · error" in html and "error: missing.txt does not exist" in html
    assert "line 29: token=*** ok" in html  # the spilled result, read back whole
    assert "test_19 PASSED" in html  # the spilled check output too
    assert "resumed from</span>" not in html and "resumed from: 20241231T235959Z" in html
    assert escape("<attempt_completion><result>done</result></attempt_completion>") in html
    assert 'class="st-passed">passed</b>' in html


def test_a_compacted_session_shows_its_summary(run_cli, tmp_path):
    writer = compaction(tmp_path / "run", golden=False)
    html = _export(run_cli, writer.path, tmp_path / "page.html")
    assert html.count('class="mark compaction"') == 2
    assert "(summary)" in html and "(clear_tool_results)" in html


def test_a_huge_spilled_result_is_cut_and_its_file_named(run_cli, tmp_path):
    writer = create(tmp_path / "run", "huge", golden=False)
    writer.message("user", "Read it.", 0)
    writer.message("assistant", "<read_file><path>big</path></read_file>", 1)
    huge = "A" * (MAX_TEXT_CHARS - 1) + "<b>LAST-SHOWN</b>" + "Z" * 500_000 + "NEVER-SHOWN"
    writer.tool_call(
        1,
        tool="read_file",
        server="workspace",
        arguments={"path": "big"},
        result=huge,
        is_error=False,
        duration_s=0.1,
    )
    writer.end("failed", "stopped", Totals(turns=1))
    writer.close()
    html = _export(run_cli, writer.path, tmp_path / "page.html")
    assert "NEVER-SHOWN" not in html and "LAST-SHOWN" not in html
    assert "AAAA&lt;\n[… cut" in html  # cut after the first character of the tag, escaped
    ref = f"{writer.path.stem}/tool-results/1.txt"
    assert f"cut: the page shows its first {MAX_TEXT_CHARS} characters; the whole text" in html
    assert f"is in {ref} beside the log" in html
    assert len(html) < 3 * MAX_TEXT_CHARS


def test_a_folder_gets_one_overview_row_per_session_and_a_torn_log_is_flagged(run_cli, tmp_path):
    run = tmp_path / "run"
    all_events(run, golden=False).close()
    torn_last_line(run, golden=False)
    html = _export(run_cli, run, tmp_path / "page.html")
    overview = html.split("</table>", 1)[0]
    assert overview.count("<tbody><tr>") == 1 and overview.count("</tr><tr>") == 1
    assert "2 sessions" in overview and "1 incomplete, 1 passed" in overview
    assert "the last line was torn" in html


def test_a_missing_log_is_a_clear_error(run_cli, tmp_path):
    result = run_cli("log", "export", "--format", "html", str(tmp_path / "nope"))
    assert result.returncode == 2
    assert "no such session log or folder" in result.stderr


def test_an_unwritable_output_is_a_clear_error(run_cli, tmp_path):
    target = tmp_path / "missing-folder" / "x.html"
    log = all_events(tmp_path / "run", golden=False).path
    result = run_cli("log", "export", "--format", "html", str(log), "-o", str(target))
    assert result.returncode == 2, result.stderr
    assert f"cannot write {target}: No such file or directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_hostile_log_renders_bounded_without_reading_outside(run_cli, tmp_path):
    """A log is an artifact from elsewhere: wrong types, a log naming itself as its own child
    many times, and a spill reference that leaves its folder still give a small, whole page."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    (tmp_path / "outside.txt").write_text("OUTSIDE-SECRET", encoding="utf-8")
    lines = [
        {"type": "header", "version": 1, "session_id": "loop", "task": "not a mapping"},
        {"type": "model_call", "turn": "one", "usage": "lots", "cost_usd": "free"},
        {
            "type": "tool_call",
            "tool": "read_file",
            "result": "preview",
            "result_ref": "../outside.txt",
        },
        *[{"type": "tool_call", "tool": "sub_agent", "child_session_id": "loop"}] * 50,
        {"type": "mystery", "payload": "<script>x</script>"},
        {"type": "end", "status": "passed", "totals": "many", "result": {"k": 1}},
    ]
    log = folder / "loop.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    html = _export(run_cli, tmp_path, tmp_path / "page.html")
    assert "OUTSIDE-SECRET" not in html
    assert "the spill reference ../outside.txt leaves the log&#x27;s folder" in html
    assert html.count("sub-agent session loop: shown above") == 50
    assert len(html) < 100_000
    assert "mystery event" in html and "&lt;script&gt;x&lt;/script&gt;" in html


def test_only_html_takes_a_folder(run_cli, tmp_path):
    all_events(tmp_path / "run", golden=False).close()
    result = run_cli("log", "export", "--format", "markdown", str(tmp_path / "run"))
    assert result.returncode == 2
    assert "--format markdown exports one log file; only html takes a folder" in result.stderr


def test_findings_show_on_their_task_escaped_and_masked(tmp_path):
    from runner.outcome import Finding
    from runner.sessionlog import export_html

    writer = create(tmp_path / "run", "review", golden=False)
    hostile = Finding(
        "src/<b>x.py",
        3,
        5,
        "error",
        '<script>alert("t")</script>',
        f"key {SECRET} & <img src=x>",
        "</pre><script>1</script>",
        "fp",
    )
    writer.finding(hostile, 1)
    writer.finding(Finding("a.py", 1, 1, "note", "Nit", "n", None, "fp2"), 1)
    writer.end("passed", "done", Totals(turns=1))
    html = export_html(writer.path)
    assert SECRET not in html and "<script>" not in html and "<img" not in html
    assert "findings: 1 error, 1 note" in html
    assert "finding (error) src/&lt;b&gt;x.py:3-5: &lt;script&gt;" in html
    assert "suggested replacement:" in html and "&lt;/pre&gt;&lt;script&gt;1" in html
    assert "finding (note) a.py:1: Nit" in html
