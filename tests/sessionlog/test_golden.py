"""Golden session logs: every version ever written stays loadable, and the writer keeps the shape.

Regenerate the current version's golden files after an intended format change with
`UPDATE_GOLDEN=1 .venv/bin/pytest tests/sessionlog`; keep the files of older versions as they are.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import jsonschema
import pytest

from runner.sessionlog import (
    FORMAT_VERSION,
    read_session,
    rebuild_messages,
    spilled_text,
    status_of,
)
from tests.sessionlog.scenarios import GOLDEN_DIR, SCENARIOS, SECRET, TORN_TAIL, lines, normalise

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "docs" / "session-log.schema.json").read_text(encoding="utf-8")
)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
ALL_GOLDEN = sorted(GOLDEN_DIR.glob("v*-*.jsonl"))
CURRENT = {name: GOLDEN_DIR / f"v{FORMAT_VERSION}-{name}.jsonl" for name in SCENARIOS}

# What each golden file must read as, in every future version of the reader.
EXPECTED = {
    "v1-all-events.jsonl": {"status": "passed", "torn": False, "events": 20, "messages": 6},
    "v1-compaction.jsonl": {"status": "failed", "torn": False, "events": 13, "messages": 3},
    "v1-no-end.jsonl": {"status": "incomplete", "torn": False, "events": 5, "messages": 3},
    "v1-torn-last-line.jsonl": {"status": "incomplete", "torn": True, "events": 5, "messages": 3},
}


def _write_golden(name: str, tmp_path: Path) -> None:
    writer = SCENARIOS[name](tmp_path, golden=True)
    shutil.copyfile(writer.path, CURRENT[name])
    spill = writer.path.parent / writer.session_id
    target = GOLDEN_DIR / writer.session_id
    shutil.rmtree(target, ignore_errors=True)
    if spill.is_dir():
        shutil.copytree(spill, target)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fresh_log_matches_the_golden_file(name: str, tmp_path: Path) -> None:
    if UPDATE:
        _write_golden(name, tmp_path / "golden")
    fresh = SCENARIOS[name](tmp_path / "fresh", golden=False)
    golden = CURRENT[name]
    assert normalise(lines(fresh.path)) == normalise(lines(golden)), (
        "the log format changed: if intended, regenerate with UPDATE_GOLDEN=1 "
        "(and bump FORMAT_VERSION when a field is removed, renamed or changes meaning)"
    )
    golden_record = read_session(golden)
    for fresh_event, golden_event in zip(
        read_session(fresh.path).events, golden_record.events, strict=True
    ):
        if fresh_event["type"] in ("tool_call", "check"):
            assert spilled_text(fresh.path, fresh_event) == spilled_text(golden, golden_event)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_schema_rejects_a_line_of_unknown_type_or_shape() -> None:
    assert not VALIDATOR.is_valid({"type": "nonsense", "ts": "2025-01-01T00:00:00.000Z"})
    bad_role = {"type": "message", "role": "system", "content": "", "turn": 0}
    assert not VALIDATOR.is_valid({**bad_role, "ts": "2025-01-01T00:00:00.000Z"})


def test_every_golden_file_is_listed_with_its_expectations() -> None:
    assert [p.name for p in ALL_GOLDEN] == sorted(EXPECTED)


@pytest.mark.parametrize("path", ALL_GOLDEN, ids=lambda p: p.name)
def test_golden_log_stays_loadable(path: Path) -> None:
    expected = EXPECTED[path.name]
    record = read_session(path)
    assert status_of(record) == expected["status"]
    assert record.torn is expected["torn"]
    assert len(record.events) == expected["events"]
    assert len(rebuild_messages(record)) == expected["messages"]
    for event in record.events:
        if event["type"] == "tool_call":
            assert len(spilled_text(path, event).encode("utf-8")) == event["result_bytes"]


@pytest.mark.parametrize("path", sorted(CURRENT.values()), ids=lambda p: p.name)
def test_every_line_of_a_current_golden_log_matches_the_schema(path: Path) -> None:
    record = read_session(path)
    for line in [record.header, *record.events]:
        VALIDATOR.validate(line)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_line_of_a_fresh_log_matches_the_schema(name: str, tmp_path: Path) -> None:
    writer = SCENARIOS[name](tmp_path, golden=False)
    for line in lines(writer.path):
        errors = [e.message for e in VALIDATOR.iter_errors(line)]
        assert not errors, (line["type"], errors)


def test_the_all_events_golden_has_every_event_type() -> None:
    types = {line["type"] for line in lines(CURRENT["all-events"])}
    assert types == set(SCHEMA["$defs"]) - {
        "timestamp",
        "context_message",
        "tool",
        "native_calls",
        "native_results",
    }


def test_the_torn_golden_ends_in_a_torn_line() -> None:
    text = CURRENT["torn-last-line"].read_text(encoding="utf-8")
    assert text.endswith("\n" + TORN_TAIL)


def test_no_golden_file_holds_the_secret() -> None:
    for path in GOLDEN_DIR.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8"), path
