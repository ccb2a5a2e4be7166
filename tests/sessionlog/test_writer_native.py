"""The session log of a native session (DESIGN section 16): calls and results with their ids in
messages, compactions and resumes, `call_id` on tool_call lines, the mode in the header, and all
of it read back by `rebuild_messages` and redacted like the rest."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from runner.sessionlog import SessionLogWriter, read_session, rebuild_messages
from tests.e2e.conftest import log_schema_errors
from tests.sessionlog.scenarios import REDACTOR, SECRET, create, header

CALLS = [{"id": "c1", "name": "read_file", "arguments": f'{{"path": "{SECRET}"}}'}]
RESULTS = [{"id": "c1", "name": "read_file", "content": "text", "is_error": False}]


def test_native_fields_are_written_read_back_and_redacted(tmp_path: Path) -> None:
    w = create(tmp_path, "native", golden=False)
    w.message("user", "task", 0)
    w.message("assistant", "", 1, tool_calls=CALLS)
    w.tool_call(
        1,
        tool="read_file",
        server="workspace",
        arguments={"path": "a"},
        result="text",
        is_error=False,
        duration_s=0.1,
        call_id="c1",
    )
    w.message("user", "", 1, tool_results=RESULTS)
    w.message("user", "plain", 1, tool_calls=[], tool_results=[])
    w.close()
    record = read_session(w.path)
    lines = [e for e in record.events if e["type"] == "message"]
    assert lines[1]["tool_calls"][0]["arguments"] == '{"path": "***"}'
    assert lines[2]["tool_results"] == RESULTS and "tool_calls" not in lines[2]
    assert "tool_calls" not in lines[3] and "tool_results" not in lines[3]
    (call,) = [e for e in record.events if e["type"] == "tool_call"]
    assert call["call_id"] == "c1"
    assert rebuild_messages(record)[1:3] == [
        {"role": "assistant", "content": "", "tool_calls": lines[1]["tool_calls"]},
        {"role": "user", "content": "", "tool_results": RESULTS},
    ]
    assert log_schema_errors(w.path) == []


def test_a_call_without_an_id_writes_no_call_id(tmp_path: Path) -> None:
    w = create(tmp_path, "xml", golden=False)
    w.tool_call(1, tool="t", server="s", arguments={}, result="", is_error=False, duration_s=0)
    w.close()
    (call,) = read_session(w.path).events
    assert "call_id" not in call


def test_compaction_and_resume_keep_the_native_fields(tmp_path: Path) -> None:
    w = create(tmp_path, "compact", golden=False)
    context = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "", "tool_calls": CALLS},
        {"role": "user", "content": "", "tool_results": RESULTS, "tool_calls": []},
    ]
    w.resume("parent", context)
    w.compaction(
        2, kind="clear_tool_results", before_tokens=9, after_tokens=3, messages=context[:2]
    )
    w.close()
    record = read_session(w.path)
    resumed = record.events[0]["messages"]
    assert resumed[2] == {"role": "user", "content": "", "tool_results": RESULTS}
    assert record.events[1]["messages"][1]["tool_calls"][0]["id"] == "c1"
    assert rebuild_messages(record)[1]["tool_calls"][0]["id"] == "c1"
    assert log_schema_errors(w.path) == []


def test_the_header_names_native_mode_and_leaves_xml_unsaid(tmp_path: Path) -> None:
    native = dataclasses.replace(header("n", golden=False), tool_mode="native")
    w = SessionLogWriter.create(tmp_path, native, REDACTOR)
    w.close()
    assert read_session(w.path).header["tool_mode"] == "native"
    x = create(tmp_path, "x", golden=False)
    x.close()
    assert "tool_mode" not in read_session(x.path).header
