"""log show / log export on a real recorded session."""

from __future__ import annotations

import json

from tests.conftest import REPO

HELLO = REPO / "examples" / "sessions" / "hello.jsonl"


def test_log_show_folds_each_tool_call_to_one_line(run_cli):
    result = run_cli("log", "show", str(HELLO))
    assert result.returncode == 0, result.stderr
    tool_lines = [line for line in result.stdout.splitlines() if line.startswith("[tool ")]
    assert [line.split()[1] for line in tool_lines] == ["list_files", "read_file"]
    assert "[read_file] Result:" not in result.stdout
    assert "END: passed" in result.stdout


def test_log_show_verbose_prints_results_in_full(run_cli):
    result = run_cli("log", "show", "-v", str(HELLO))
    assert result.returncode == 0
    assert '1 | """A tiny calculator' in result.stdout


def test_log_export_json_is_one_document(run_cli):
    result = run_cli("log", "export", str(HELLO), "--format", "json")
    document = json.loads(result.stdout)
    assert document["header"]["type"] == "header"
    assert document["end"]["status"] == "passed"
    assert [e["type"] for e in document["events"]].count("tool_call") == 2


def test_log_export_markdown_has_every_message(run_cli, tmp_path):
    out = tmp_path / "t.md"
    result = run_cli("log", "export", str(HELLO), "--format", "markdown", "-o", str(out))
    assert result.returncode == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Session ")
    assert text.count("## Assistant") == 3
    assert "### Tool `read_file`" in text


def test_log_show_of_a_torn_log_says_so(run_cli, tmp_path):
    torn = tmp_path / "torn.jsonl"
    lines = HELLO.read_text(encoding="utf-8").splitlines()
    torn.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20], encoding="utf-8")
    result = run_cli("log", "show", str(torn))
    assert result.returncode == 0
    assert "torn" in result.stdout and "no end record" in result.stdout


def test_log_show_of_a_missing_file_is_a_usage_error(run_cli, tmp_path):
    result = run_cli("log", "show", str(tmp_path / "nope.jsonl"))
    assert result.returncode == 2


def test_run_verbose_prints_each_task_transcript(run_cli, tmp_path):
    task = REPO / "examples" / "tasks" / "hello.yaml"
    result = run_cli("run", str(task), "--model", f"replay:{HELLO}", "--out", str(tmp_path), "-v")
    assert result.returncode == 0, result.stderr
    assert "[tool list_files ok]" in result.stdout and "END: passed" in result.stdout
    quiet = run_cli("run", str(task), "--model", f"replay:{HELLO}", "--out", str(tmp_path / "q"))
    assert "[tool list_files ok]" not in quiet.stdout


def test_log_show_verbose_and_markdown_print_each_tool_result_once(run_cli, tmp_path):
    shown = run_cli("log", "show", "-v", str(HELLO))
    out = tmp_path / "t.md"
    run_cli("log", "export", str(HELLO), "--format", "markdown", "-o", str(out))
    markdown = out.read_text(encoding="utf-8")
    for text in (shown.stdout, markdown):
        assert text.count('1 | """A tiny calculator') == 1
        assert text.count("calc.py\ntest_calc.py") == 1


def _log_with_a_call_error(tmp_path):
    from runner.redact import Redactor
    from runner.sessionlog import Header, SessionLogWriter

    header = Header(run_id="r", task={"name": "t"}, model="openai:gpt-4.1", system_prompt="s")
    with SessionLogWriter.create(tmp_path, header, Redactor([])) as log:
        log.message("user", "Do it.", 0)
        log.message("assistant", "<read_file>...</read_file><nope/>", 1)
        log.tool_call(
            1,
            tool="read_file",
            server="workspace",
            arguments={"path": "a"},
            result="CONTENT-ONE",
            is_error=False,
            duration_s=0.1,
        )
        log.message("user", "[read_file] Result:\nCONTENT-ONE\n\n[nope] Error:\nno tool nope", 1)
    return log.path


def test_log_show_keeps_what_a_results_message_adds_to_its_calls(run_cli, tmp_path):
    path = _log_with_a_call_error(tmp_path)
    for args in ((), ("-v",)):
        shown = run_cli("log", "show", *args, str(path))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.count("no tool nope") == 1
        assert shown.stdout.count("CONTENT-ONE") == 1
