"""read_session and its helpers: torn lines, bad lines, versions, context rebuild, resume choice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.errors import ExitCode
from runner.outcome import Status, Totals
from runner.sessionlog import (
    FORMAT_VERSION,
    LogReadError,
    find_sessions,
    read_session,
    rebuild_messages,
    sessions_to_resume,
    spilled_text,
    status_of,
)
from tests.sessionlog.scenarios import GOLDEN_DIR, create, no_end


def _session(out: Path, name: str, status: Status | None, parent: str | None = None) -> str:
    w = create(out, name, golden=False, parent_id=parent)
    w.message("user", f"task {name}", 0)
    if status is None:
        w.close()
    else:
        w.end(status, "why", Totals())
    return w.session_id


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    w = no_end(tmp_path, golden=False)
    whole = read_session(w.path)
    with w.path.open("ab") as handle:
        handle.write('{"type": "message", "content": "\u00e9'.encode()[:-1])  # cut mid-character
    torn = read_session(w.path)
    assert torn.torn and not whole.torn
    assert torn.events == whole.events


def test_a_bad_line_in_the_middle_is_reported_with_its_line_number(tmp_path: Path) -> None:
    w = no_end(tmp_path, golden=False)
    lines = w.path.read_text(encoding="utf-8").split("\n")
    lines[2] = lines[2][:10]
    w.path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(LogReadError, match=rf"{w.path.name}:3: not a JSON object") as caught:
        read_session(w.path)
    assert caught.value.line == 3
    assert caught.value.exit_code == ExitCode.USAGE


def test_a_log_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    w = no_end(tmp_path, golden=False)
    lines = w.path.read_text(encoding="utf-8").split("\n")
    header = json.loads(lines[0])
    header["version"] = FORMAT_VERSION + 1
    lines[0] = json.dumps(header)
    w.path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(LogReadError, match=f"version {FORMAT_VERSION + 1}.*upgrade agent-runner"):
        read_session(w.path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ('{"type": "header", "ver', ":1: not a JSON object"),
        ('{"type": "message", "role": "user", "content": "x", "turn": 0}\n', "no.*header"),
        ('{"type": "header", "version": "1", "session_id": "s"}\n', "not a format version"),
        ('{"type": "header", "version": 1}\n', "no session_id"),
    ],
)
def test_a_log_without_a_usable_header_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LogReadError, match=message):
        read_session(path)


def test_a_line_after_the_end_line_is_an_error(tmp_path: Path) -> None:
    _session(tmp_path, "ended", "passed")
    (path,) = find_sessions(tmp_path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "warning", "message": "late", "ts": "2025-01-01T00:00:00Z"}\n')
    with pytest.raises(LogReadError, match=":4: a warning line after the end line"):
        read_session(path)


def test_rebuild_messages_without_compaction_lists_the_messages_in_order() -> None:
    record = read_session(GOLDEN_DIR / "v1-no-end.jsonl")
    assert rebuild_messages(record) == [
        {"role": "user", "content": "Fix the failing test. The deploy key is ***."},
        {"role": "assistant", "content": "<read_file><path>tests/test_app.py</path></read_file>"},
        {"role": "user", "content": "<result tool='read_file'>assert token() == '***'</result>"},
    ]


def test_rebuild_messages_continues_from_the_last_compaction() -> None:
    record = read_session(GOLDEN_DIR / "v1-compaction.jsonl")
    assert rebuild_messages(record) == [
        {"role": "user", "content": "Fix the failing test. The deploy key is ***."},
        {"role": "user", "content": "Summary: read the test, which compares ***."},
        {"role": "assistant", "content": "I could not fix it."},
    ]


def test_rebuild_messages_starts_a_resumed_session_from_its_inherited_context() -> None:
    messages = rebuild_messages(read_session(GOLDEN_DIR / "v1-all-events.jsonl"))
    assert messages[:2] == [
        {"role": "user", "content": "Fix the failing test. The key is ***."},
        {"role": "assistant", "content": "I ran out of turns."},
    ]
    assert messages[-1]["content"].startswith("<attempt_completion>")


def test_status_of_is_incomplete_without_an_end_line() -> None:
    assert status_of(read_session(GOLDEN_DIR / "v1-no-end.jsonl")) == "incomplete"
    assert status_of(read_session(GOLDEN_DIR / "v1-compaction.jsonl")) == "failed"


def test_find_sessions_takes_a_file_an_out_folder_or_a_sessions_folder(tmp_path: Path) -> None:
    first = _session(tmp_path, "a", "passed")
    second = _session(tmp_path, "b", None)
    expected = sorted([tmp_path / "sessions" / f"{i}.jsonl" for i in (first, second)])
    assert find_sessions(tmp_path) == expected
    assert find_sessions(tmp_path / "sessions") == expected
    assert find_sessions(expected[0]) == [expected[0]]
    with pytest.raises(LogReadError, match="no such session log"):
        find_sessions(tmp_path / "missing")


def test_sessions_to_resume_picks_the_unpassed_leaves_of_each_chain(tmp_path: Path) -> None:
    _session(tmp_path, "passed", "passed")
    failed = _session(tmp_path, "failed", "failed")
    incomplete = _session(tmp_path, "incomplete", None)
    budget = _session(tmp_path, "budget", "budget_exceeded")
    errored = _session(tmp_path, "errored", "error")
    # A chain still failing: only its newest link is resumed.
    chain_root = _session(tmp_path, "chain", "failed")
    chain_leaf = _session(tmp_path, "chain", "interrupted", parent=chain_root)
    # A chain that passed on resume: nothing to do.
    fixed_root = _session(tmp_path, "fixed", "failed")
    _session(tmp_path, "fixed", "passed", parent=fixed_root)

    picked = {p.stem for p in sessions_to_resume(tmp_path)}
    assert picked == {failed, incomplete, budget, errored, chain_leaf}


def test_spilled_text_refuses_a_reference_outside_the_log_folder(tmp_path: Path) -> None:
    log = tmp_path / "sessions" / "s.jsonl"
    event = {"type": "tool_call", "result": "x", "result_ref": "../../etc/passwd"}
    with pytest.raises(LogReadError, match="outside"):
        spilled_text(log, event)


def _run_of(out: Path, name: str, started: str, status: Status) -> str:
    """A session of task `name` from its own `run` (no parent), started at `started`."""
    from runner.redact import Redactor
    from runner.sessionlog import Header, SessionLogWriter

    header = Header(
        run_id=started, task={"name": name}, model="m:x", system_prompt="", started_at=started
    )
    w = SessionLogWriter.create(out, header, Redactor([]))
    w.end(status, "why", Totals())
    return w.session_id


def test_sessions_to_resume_takes_only_each_tasks_latest_session(tmp_path: Path) -> None:
    _run_of(tmp_path, "fixed", "2025-01-01T00:00:02.000Z", "passed")
    _run_of(tmp_path, "fixed", "2025-01-01T00:00:01.000Z", "failed")
    _run_of(tmp_path, "flaky", "2025-01-01T00:00:01.000Z", "failed")
    latest = _run_of(tmp_path, "flaky", "2025-01-01T00:00:03.000Z", "budget_exceeded")
    _run_of(tmp_path, "flaky", "2025-01-01T00:00:02.000Z", "failed")
    assert [p.stem for p in sessions_to_resume(tmp_path)] == [latest]


def test_sessions_to_resume_takes_each_tasks_latest_session_across_folders(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "attempt-1", tmp_path / "attempt-2"
    _run_of(first, "fixed", "2025-01-01T00:00:01.000Z", "failed")
    _run_of(first, "flaky", "2025-01-01T00:00:01.000Z", "failed")
    _run_of(second, "fixed", "2025-01-01T00:10:01.000Z", "passed")
    latest = _run_of(second, "flaky", "2025-01-01T00:10:02.000Z", "failed")
    assert [p.stem for p in sessions_to_resume(first, second)] == [latest]
    assert [p.stem for p in sessions_to_resume(second, first)] == [latest]
