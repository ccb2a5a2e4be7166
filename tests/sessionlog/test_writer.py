"""SessionLogWriter: flushed per event, redacted everywhere, large outputs spilled, clear errors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import ExitCode
from runner.outcome import Totals
from runner.redact import MASK, SUBSTRING_LENGTH, Redactor
from runner.sessionlog import (
    LogWriteError,
    SessionLogWriter,
    new_session_id,
    prompt_sha256,
    read_session,
    spilled_text,
)
from tests.sessionlog.scenarios import SECRET, all_events, create, header


def _last_line(path: Path) -> Any:
    # A second handle, as another process would read the file while the writer is still open.
    with path.open(encoding="utf-8") as handle:
        return json.loads(handle.read().split("\n")[-2])


def test_every_event_is_readable_before_the_writer_closes(tmp_path: Path) -> None:
    w = create(tmp_path, "flush", golden=False)
    assert _last_line(w.path)["type"] == "header"
    writes: list[tuple[str, Callable[[], None]]] = [
        ("message", lambda: w.message("user", "hi", 0)),
        ("retry", lambda: w.retry(1, attempt=1, reason="429", status=429, wait_s=0.5)),
        ("message", lambda: w.message("assistant", "hello", 1)),
        (
            "model_call",
            lambda: w.model_call(
                1,
                latency_s=0.1,
                usage={},
                cost_usd=0.0,
                retries=0,
                stop_reason="stop",
                model="m",
            ),
        ),
        (
            "tool_call",
            lambda: w.tool_call(
                1,
                tool="t",
                server="s",
                arguments={},
                result="r",
                is_error=False,
                duration_s=0.0,
            ),
        ),
        (
            "compaction",
            lambda: w.compaction(
                2, kind="summary", before_tokens=2, after_tokens=1, messages=[], summary="s"
            ),
        ),
        ("resume", lambda: w.resume("parent", [])),
        ("check", lambda: w.check("true", 0, "", 1)),
        ("warning", lambda: w.warning("careful")),
        ("end", lambda: w.end("passed", "done", Totals())),
    ]
    for expected, write in writes:
        write()
        assert _last_line(w.path)["type"] == expected


def test_writing_after_the_end_line_raises(tmp_path: Path) -> None:
    w = create(tmp_path, "after-end", golden=False)
    w.end("failed", "no", Totals())
    with pytest.raises(RuntimeError, match="end line"):
        w.message("user", "more", 1)
    with pytest.raises(RuntimeError, match="end line"):
        w.end("passed", "again", Totals())
    assert w.ended


def test_writing_after_close_raises(tmp_path: Path) -> None:
    with create(tmp_path, "closed", golden=False) as w:
        w.message("user", "hi", 0)
    with pytest.raises(RuntimeError, match="closed"):
        w.warning("late")


def test_secrets_are_redacted_in_every_event_type_and_file(tmp_path: Path) -> None:
    w = all_events(tmp_path, golden=False)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8"), path
    record = read_session(w.path)
    masked = {line["type"] for line in [record.header, *record.events] if MASK in json.dumps(line)}
    # model_call lines carry no free text in this scenario; see the test below.
    assert masked == {line["type"] for line in record.events} - {"model_call"} | {"header"}
    assert record.header["task"]["extensions"]["github"]["envs"]["GITHUB_TOKEN"] == MASK
    spilled = [e for e in record.events if e.get("result_ref")]
    assert spilled
    for event in spilled:
        assert MASK in spilled_text(w.path, event)


def test_secrets_are_redacted_in_model_call_fields(tmp_path: Path) -> None:
    w = create(tmp_path, "model-call", golden=False)
    w.model_call(
        1,
        latency_s=0.1,
        usage={"input_tokens": 1},
        cost_usd=None,
        retries=0,
        stop_reason=f"stop {SECRET}",
        model=f"proxy-{SECRET}",
    )
    event = read_session(w.path).events[0]
    assert (event["stop_reason"], event["model"]) == (f"stop {MASK}", f"proxy-{MASK}")


def test_a_large_tool_result_spills_with_a_bounded_preview(tmp_path: Path) -> None:
    result = "é" * 40_000 + "x" * 1000  # multi-byte, so the preview cut falls inside a character
    w = SessionLogWriter.create(tmp_path, header("spill", golden=False), Redactor())
    w.tool_call(
        1, tool="t", server="s", arguments={}, result=result, is_error=False, duration_s=0.0
    )
    w.tool_call(
        1, tool="t", server="s", arguments={}, result="a" * 65536, is_error=False, duration_s=0
    )
    big, at_cap = read_session(w.path).events
    assert big["result_bytes"] == len(result.encode("utf-8")) > 65536
    assert big["result_ref"] == f"{w.session_id}/tool-results/1.txt"
    assert len(big["result"].encode("utf-8")) <= 4096
    assert result.startswith(big["result"])
    assert (w.path.parent / big["result_ref"]).read_text(encoding="utf-8") == result
    assert spilled_text(w.path, big) == result
    assert at_cap["result_ref"] is None
    assert at_cap["result"] == "a" * 65536


def test_the_system_prompt_is_saved_once_under_its_hash(tmp_path: Path) -> None:
    first = create(tmp_path, "prompt-a", golden=False)
    second = create(tmp_path, "prompt-b", golden=False)
    sha = first.header["system_prompt_sha256"]
    assert first.prompt_path == second.prompt_path == tmp_path / "prompts" / f"{sha}.md"
    saved = first.prompt_path.read_text(encoding="utf-8")
    assert saved == first.header["system_prompt"]
    assert SECRET not in saved
    assert prompt_sha256(saved) == sha
    assert [p.name for p in (tmp_path / "prompts").iterdir()] == [f"{sha}.md"]


def test_a_header_dict_gets_an_id_start_time_and_prompt_hash(tmp_path: Path) -> None:
    w = SessionLogWriter.create(
        tmp_path,
        {"run_id": "r", "task": {"name": "My Task!"}, "model": "m", "system_prompt": "p"},
        Redactor(),
    )
    assert re.fullmatch(r"\d{8}T\d{6}Z-my-task-[0-9a-f]{6}", w.session_id)
    assert w.path == tmp_path / "sessions" / f"{w.session_id}.jsonl"
    assert w.header["system_prompt_sha256"] == prompt_sha256("p")
    assert w.header["parent_id"] is None
    assert w.header["started_at"].endswith("Z")
    assert set(w.header["host"]) == {"os", "python", "hostname", "user", "cwd"}


def test_an_unknown_header_field_is_a_bug(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="colour"):
        SessionLogWriter.create(
            tmp_path,
            {"run_id": "r", "task": {}, "model": "m", "system_prompt": "", "colour": 1},
            Redactor(),
        )


def test_a_session_id_that_is_no_safe_file_name_is_refused(tmp_path: Path) -> None:
    unsafe = {"run_id": "r", "task": {}, "model": "m", "system_prompt": "", "session_id": "../x"}
    with pytest.raises(ValueError, match="safe file name"):
        SessionLogWriter.create(tmp_path, unsafe, Redactor())


def test_session_ids_sort_by_start_time_and_are_unique() -> None:
    early = datetime(2025, 1, 1, 9, 0, 0, tzinfo=UTC)
    late = datetime(2025, 1, 1, 10, 0, 0, tzinfo=UTC)
    assert new_session_id("zzz", early) < new_session_id("aaa", late)
    assert new_session_id("Fix: the *bug*", early).startswith("20250101T090000Z-fix-the-bug-")
    assert new_session_id("!!!", early).startswith("20250101T090000Z-task-")
    assert len({new_session_id("same", early) for _ in range(200)}) == 200


def test_an_unwritable_out_folder_raises_log_write_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(LogWriteError) as caught:
        create(blocker / "out", "unwritable", golden=False)
    assert caught.value.exit_code == ExitCode.INFRASTRUCTURE
    assert str(blocker / "out") in str(caught.value)
    assert "writable" in str(caught.value)


def test_a_spill_that_cannot_be_written_raises_log_write_error(tmp_path: Path) -> None:
    w = create(tmp_path, "spill-fails", golden=False)
    (w.path.parent / w.session_id).write_text("", encoding="utf-8")  # blocks the spill folder
    with pytest.raises(LogWriteError, match="tool-results"):
        w.tool_call(
            1, tool="t", server="s", arguments={}, result="x" * 1000, is_error=False, duration_s=0
        )


def test_line_separators_in_text_never_split_a_line(tmp_path: Path) -> None:
    w = create(tmp_path, "separators", golden=False)
    text = "a\u2028b\u2029c\x85d\ne\rf"
    w.message("assistant", text, 1)
    raw = w.path.read_text(encoding="utf-8")
    assert len(raw.splitlines()) == 2
    assert read_session(w.path).events[0]["content"] == text


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    content=st.text(),
    secret=st.text(st.characters(blacklist_characters="*"), min_size=SUBSTRING_LENGTH, max_size=12),
)
def test_any_text_round_trips_with_the_secret_masked(
    tmp_path_factory: pytest.TempPathFactory, content: str, secret: str
) -> None:
    out = tmp_path_factory.mktemp("prop")
    w = SessionLogWriter.create(out, header("prop", golden=False), Redactor([secret]))
    w.message("user", content, 0)
    w.close()
    written = read_session(w.path).events[0]["content"]
    assert written == Redactor([secret]).text(content)
    assert secret not in written


@settings(max_examples=80, derandomize=True, deadline=None)
@given(
    around=st.tuples(st.text(max_size=20), st.text(max_size=20)),
    secret=st.text(st.characters(blacklist_characters="*"), min_size=SUBSTRING_LENGTH, max_size=12),
)
def test_a_secret_is_masked_in_values_and_keys_whatever_json_makes_of_it(
    tmp_path_factory: pytest.TempPathFactory, around: tuple[str, str], secret: str
) -> None:
    # Quotes, backslashes and control characters are escaped in JSON: the writer's one search of
    # the finished line would miss such a secret, so it must redact string by string instead.
    before, after = around
    out = tmp_path_factory.mktemp("prop")
    w = SessionLogWriter.create(out, header("prop", golden=False), Redactor([secret]))
    text = before + secret + after
    w.tool_call(
        1, tool="t", server="s", arguments={text: text}, result=text, is_error=False, duration_s=0
    )
    w.close()
    (event,) = read_session(w.path).events
    masked = Redactor([secret]).text(text)
    assert event["arguments"] == {masked: masked}
    assert event["result"] == masked
