"""SessionLogWriter edges the mutation run found unpinned (issue 21): the default spill cap, file
numbering per kind, the log's own file handling, argument checks, and what a full disk does."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import locale
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.outcome import Finding, Totals
from runner.redact import MASK, Redactor
from runner.sessionlog import LogWriteError, SessionLogWriter, read_session, spilled_text
from runner.sessionlog.events import EventStream
from tests.sessionlog.scenarios import REDACTOR, SECRET, create, header

REPO = Path(__file__).resolve().parents[2]


def _handles_on(path: Path) -> int:
    """How many of this process's file descriptors are open on `path` (Linux /proc)."""
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        try:
            count += Path(os.readlink(fd)) == path
        except OSError:
            continue  # the descriptor iterdir itself used, already closed
    return count


def _tool_call(w: SessionLogWriter, result: str) -> None:
    w.tool_call(1, tool="t", server="s", arguments={}, result=result, is_error=False, duration_s=0)


def test_the_default_cap_keeps_64_kib_inline_and_spills_one_byte_more(tmp_path: Path) -> None:
    w = SessionLogWriter.create(tmp_path, header("cap", golden=False), Redactor())
    _tool_call(w, "a" * 65536)
    _tool_call(w, "b" * 65537)
    w.check("make", 1, "c" * 65537, 1)
    inline, spilled, check = read_session(w.path).events
    assert inline["result_ref"] is None
    assert spilled["result_ref"] == f"{w.session_id}/tool-results/2.txt"
    assert check["output_ref"] == f"{w.session_id}/check-output/1.txt"
    assert w.out_dir == tmp_path


def test_spill_files_are_numbered_per_kind_one_after_another(tmp_path: Path) -> None:
    w = create(tmp_path, "numbering", golden=False)  # a 256-byte cap
    _tool_call(w, "first " * 100)
    _tool_call(w, "second " * 100)
    w.check("pytest", 1, "one " * 100, 1)
    w.check("pytest", 0, "two " * 100, 2)
    events = read_session(w.path).events
    refs = [e.get("result_ref") or e.get("output_ref") for e in events]
    sid = w.session_id
    assert refs == [
        f"{sid}/tool-results/1.txt",
        f"{sid}/tool-results/2.txt",
        f"{sid}/check-output/1.txt",
        f"{sid}/check-output/2.txt",
    ]
    assert [spilled_text(w.path, e).split()[0] for e in events] == ["first", "second", "one", "two"]


def test_usage_counts_default_to_zero_and_not_estimated(tmp_path: Path) -> None:
    w = create(tmp_path, "usage", golden=False)
    w.model_call(
        1, latency_s=0.1, usage={"input_tokens": 7}, cost_usd=None, retries=0, stop_reason=None,
        model="m",
    )  # fmt: skip
    (event,) = read_session(w.path).events
    assert event["usage"] == {
        "input_tokens": 7,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "estimated": False,
    }


def test_a_message_role_or_compaction_kind_outside_the_format_is_refused(tmp_path: Path) -> None:
    w = create(tmp_path, "refused", golden=False)
    with pytest.raises(ValueError, match="role must be user or assistant"):
        w.message("system", "x", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind must be"):
        w.compaction(1, kind="trim", before_tokens=2, after_tokens=1, messages=[])  # type: ignore[arg-type]
    w.close()
    assert read_session(w.path).events == []


def test_a_given_session_and_parent_id_are_kept_even_when_they_hold_a_secret(
    tmp_path: Path,
) -> None:
    # Ids name files and link sessions: they are made by the runner, and masking one would break
    # the file name (`***` is refused) and the link to the parent.
    given = header("ids", golden=True, parent_id="20250101T000000Z-parent-a1b2c3")
    w = SessionLogWriter.create(tmp_path, given, Redactor(["a1b2c3"]))
    w.message("user", "the code is a1b2c3", 0)
    w.close()
    record = read_session(w.path)
    assert record.header["session_id"] == "20250101T000000Z-ids-a1b2c3" == w.session_id
    assert record.header["parent_id"] == "20250101T000000Z-parent-a1b2c3"
    assert record.events[0]["content"] == f"the code is {MASK}"


def test_many_sessions_share_one_out_folder_and_a_reused_id_is_refused(tmp_path: Path) -> None:
    first = SessionLogWriter.create(tmp_path, header("shared", golden=True), Redactor())
    second = create(tmp_path, "shared-two", golden=False)
    assert first.path.parent == second.path.parent == tmp_path / "sessions"
    with pytest.raises(LogWriteError, match="shared"):
        SessionLogWriter.create(tmp_path, header("shared", golden=True), Redactor())
    first.close()
    second.close()


def test_a_sessions_path_that_is_a_file_gives_log_write_error(tmp_path: Path) -> None:
    (tmp_path / "sessions").write_text("", encoding="utf-8")
    with pytest.raises(LogWriteError, match="sessions"):
        create(tmp_path, "blocked", golden=False)


def test_the_log_file_is_closed_after_end_and_after_close(tmp_path: Path) -> None:
    ended = create(tmp_path, "ended", golden=False)
    assert _handles_on(ended.path) == 1
    ended.end("passed", "done", Totals())
    assert _handles_on(ended.path) == 0
    closed = create(tmp_path, "closed", golden=False)
    closed.close()
    closed.close()  # twice is harmless
    assert _handles_on(closed.path) == 0


def test_non_ascii_text_is_written_as_itself(tmp_path: Path) -> None:
    w = create(tmp_path, "utf8", golden=False)
    w.message("user", "café ✓", 0)
    w.message("user", "café and sk-test-SECRET-4f9a2c", 0)  # the redacted line too
    w.close()
    raw = w.path.read_text(encoding="utf-8")
    assert '"café ✓"' in raw
    assert f'"café and {MASK}"' in raw


def test_a_lone_surrogate_from_a_model_or_server_is_logged_not_a_crash(tmp_path: Path) -> None:
    # JSON lets a model or server send "\ud83d" alone (half an emoji cut between stream chunks);
    # UTF-8 cannot encode it, and the log once failed the task with UnicodeEncodeError.
    w = create(tmp_path, "surrogate", golden=False)
    w.message("assistant", "half \ud83d of an emoji", 1)
    _tool_call(w, "\udcff" * 300)  # over the scenario's cap: spilled too
    w.close()
    message, call = read_session(w.path).events
    assert message["content"] == "half \ud83d of an emoji"
    assert spilled_text(w.path, call) == "\\udcff" * 300


_FULL_DISK = textwrap.dedent(
    """
    import os, resource, signal, sys
    from pathlib import Path
    from runner.redact import Redactor
    from runner.sessionlog import LogWriteError, SessionLogWriter
    from tests.sessionlog.scenarios import header

    out = Path(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over the limit: EFBIG, as a full disk gives
    w = SessionLogWriter.create(out, header("full", golden=False), Redactor())
    resource.setrlimit(resource.RLIMIT_FSIZE, (w.path.stat().st_size + 10, resource.RLIM_INFINITY))
    for step in (lambda: w.message("user", "x" * 100, 0), w.close):
        try:
            step()
            print("no error")
        except LogWriteError as error:
            print("LogWriteError", "File too large" in str(error))
    fds = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.RLIM_INFINITY))
    try:
        SessionLogWriter.create(out, header("full-header", golden=False), Redactor())
        print("no error")
    except LogWriteError as error:
        print("LogWriteError", "full-header" in str(error))
        # Counted here, while the error's traceback still holds the writer's frame: a handle
        # left to the garbage collector would still be open.
        print("handles left open:", len(os.listdir("/proc/self/fd")) - fds)
    """
)


def test_a_full_disk_gives_log_write_error_and_leaves_no_file_open(tmp_path: Path) -> None:
    # A file size limit makes writes fail with EFBIG, as a full disk would, in a process of its own.
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO))},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The failed event, then the close that retries its buffered bytes, then a header that
    # does not fit: each a LogWriteError naming the file, and no handle left behind.
    assert done.stdout.splitlines() == [
        "LogWriteError True",
        "LogWriteError True",
        "LogWriteError True",
        "handles left open: 0",
    ]


def test_a_hook_run_is_logged_with_its_outcome_and_output(tmp_path: Path) -> None:
    w = create(tmp_path, "hook", golden=False)
    w.hook(
        event="pre_tool_use", tool="t", command="./check.sh", exit_code=2, timed_out=False,
        duration_s=0.5, outcome="blocked", stdout="no", stderr="", turn=3,
    )  # fmt: skip
    w.close()
    (event,) = read_session(w.path).events
    assert (event["type"], event["outcome"], event["exit_code"], event["turn"]) == (
        "hook",
        "blocked",
        2,
        3,
    )


def _fields(event: dict[str, Any]) -> dict[str, Any]:
    """An event line without its time stamp (the one field a test does not choose)."""
    return {key: value for key, value in event.items() if key != "ts"}


def test_every_event_writes_each_argument_under_its_own_name(tmp_path: Path) -> None:
    """Readers (resume, the HTML view, summaries) look fields up by name: a value written under
    a neighbour's name, or left out, breaks them without any error at write time."""
    w = create(tmp_path, "fields", golden=False)
    w.message("assistant", "whole reply", 2, context="kept part")
    w.model_call(
        3, latency_s=0.25, usage={"input_tokens": 5}, cost_usd=0.5, retries=2,
        stop_reason="length", model="m1",
    )  # fmt: skip
    w.tool_call(
        4, tool="read", server="ws", arguments={"a": 1}, result="out", is_error=True,
        duration_s=0.75, child_session_id="child-1", call_id="c9",
    )  # fmt: skip
    w.compaction(5, kind="summary", before_tokens=900, after_tokens=300, messages=[], summary="s")
    w.resume("parent-1", [{"role": "user", "content": "go"}])
    w.check("pytest", 1, "failed", 2)
    w.retry(6, attempt=2, reason="HTTP 503", status=503, wait_s=1.5)
    w.hook(
        event="post_tool_use", tool="edit", command="./lint.sh", exit_code=0, timed_out=True,
        duration_s=0.1, outcome="warning", stdout="said", stderr="moaned", turn=7,
    )  # fmt: skip
    w.network(turn=8, host="example.com", allowed=False)
    w.finding(Finding("a.py", 1, 2, "note", "rule", "why"), 9)
    w.warning("careful")
    w.end("failed", "turns", Totals(turns=3), "res", kind="limit")
    usage = {"input_tokens": 5, "output_tokens": 0, "cache_read_tokens": 0}
    finding = {"path": "a.py", "line": 1, "end_line": 2, "severity": "note", "title": "rule"}
    assert [_fields(e) for e in read_session(w.path).events] == [
        {"type": "message", "role": "assistant", "content": "whole reply", "turn": 2,
         "context": "kept part"},
        {"type": "model_call", "turn": 3, "model": "m1", "latency_s": 0.25,
         "usage": {**usage, "cache_write_tokens": 0, "estimated": False}, "cost_usd": 0.5,
         "retries": 2, "stop_reason": "length"},
        {"type": "tool_call", "turn": 4, "tool": "read", "server": "ws", "arguments": {"a": 1},
         "result": "out", "result_ref": None, "result_bytes": 3, "is_error": True,
         "duration_s": 0.75, "child_session_id": "child-1", "call_id": "c9"},
        {"type": "compaction", "turn": 5, "kind": "summary", "before_tokens": 900,
         "after_tokens": 300, "messages": [], "summary": "s"},
        {"type": "resume", "parent_id": "parent-1",
         "messages": [{"role": "user", "content": "go"}]},
        {"type": "check", "command": "pytest", "exit_code": 1, "output": "failed",
         "output_ref": None, "output_bytes": 6, "attempt": 2},
        {"type": "retry", "turn": 6, "attempt": 2, "reason": "HTTP 503", "status": 503,
         "wait_s": 1.5},
        {"type": "hook", "turn": 7, "event": "post_tool_use", "tool": "edit",
         "command": "./lint.sh", "exit_code": 0, "timed_out": True, "duration_s": 0.1,
         "outcome": "warning", "stdout": "said", "stderr": "moaned"},
        {"type": "network", "turn": 8, "host": "example.com", "allowed": False},
        {"type": "finding", "turn": 9, **finding, "message": "why", "suggestion": None,
         "fingerprint": ""},
        {"type": "warning", "message": "careful"},
        {"type": "end", "status": "failed", "reason": "turns", "kind": "limit", "result": "res",
         "totals": dataclasses.asdict(Totals(turns=3))},
    ]  # fmt: skip


def test_a_sub_agent_id_and_a_call_id_are_each_written_only_when_given(tmp_path: Path) -> None:
    """A sub-agent call in XML mode has no call id, and a native call that starts no sub-agent
    has no child session: neither may appear as a key holding the other's value or null."""
    w = create(tmp_path, "ids-apart", golden=False)
    w.tool_call(1, tool="sub_agent", server="", arguments={}, result="", is_error=False,
                duration_s=0, child_session_id="child-2")  # fmt: skip
    w.tool_call(1, tool="t", server="s", arguments={}, result="", is_error=False, duration_s=0,
                call_id="c3")  # fmt: skip
    w.message("user", "plain", 1)
    w.close()
    sub, native, plain = read_session(w.path).events
    assert (sub["child_session_id"], "call_id" in sub) == ("child-2", False)
    assert (native["call_id"], "child_session_id" in native) == ("c3", False)
    assert "context" not in plain


def test_the_events_stream_gets_each_line_as_the_log_has_it(tmp_path: Path) -> None:
    """`--events` readers follow a run live: every record names its task and session and holds
    the log's line itself, masked the same."""
    stream_path = tmp_path / "events.jsonl"
    stream = EventStream.open(str(stream_path))
    w = SessionLogWriter.create(tmp_path, header("streamed", golden=False), REDACTOR, events=stream)
    w.message("user", f"the key is {SECRET}", 0)
    w.end("passed", "done", Totals())
    stream.close()
    log_lines = w.path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in stream_path.read_text(encoding="utf-8").splitlines()]
    assert [(r["task"], r["session_id"]) for r in records] == [("streamed", w.session_id)] * 3
    assert [json.dumps(r["record"], ensure_ascii=False) for r in records] == log_lines
    assert records[1]["record"]["content"] == f"the key is {MASK}"


@contextlib.contextmanager
def _ascii_locale() -> Iterator[None]:
    """The C locale's ASCII as this process's locale encoding, as on a host without UTF-8."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


def test_the_log_is_utf_8_whatever_the_locale(tmp_path: Path) -> None:
    """The format says UTF-8 (readers open it so): a host whose locale is ASCII or Latin-1 must
    not write the log in its own encoding."""
    with _ascii_locale():
        w = create(tmp_path, "locale", golden=False)
        w.message("user", "café ✓", 0)
        w.close()
    assert read_session(w.path).events[0]["content"] == "café ✓"


def test_a_value_json_has_no_form_for_is_written_as_its_text_and_masked(tmp_path: Path) -> None:
    """Fields such as tool arguments or network details take any value: one JSON cannot hold is
    logged as its text, not a crash, and a secret in that text is masked like any other."""
    w = create(tmp_path, "not-json", golden=False)
    w.tool_call(1, tool="t", server="s", arguments={"path": Path("src/app.py")}, result="",
                is_error=False, duration_s=0)  # fmt: skip
    w.network(turn=1, host="h", rule=Path("keys") / SECRET)
    w.close()
    call, connection = read_session(w.path).events
    assert call["arguments"] == {"path": "src/app.py"}
    assert connection["rule"] == f"keys/{MASK}"
    assert SECRET not in w.path.read_text(encoding="utf-8")
