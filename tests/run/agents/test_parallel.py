"""Which calls of a session may run at once (runner.run.agents.call_concurrency, with
runner.run.turn.read_lane)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.run.agents import call_concurrency
from runner.run.turn import read_lane
from runner.task import load_tasks
from runner.toolcall import ToolCall, ToolSpec

TOOLS = [
    ToolSpec("read_file", "", server="workspace", read_only=True),
    ToolSpec("list_files", "", server="workspace", read_only=True),
    ToolSpec("write_to_file", "", server="workspace"),
    ToolSpec("lookup", "", server="docs", read_only=True),
]


def task_from(tmp_path: Path, text: str) -> Any:
    file = tmp_path / "t.yaml"
    file.write_text(text, encoding="utf-8")
    (task,) = load_tasks([file])
    return task


def test_the_read_lane_holds_every_read_only_tool(tmp_path: Path) -> None:
    lane = read_lane(task_from(tmp_path, "prompt: hi\n"), TOOLS, 8)
    assert lane.tools == {"read_file", "list_files", "lookup"} and lane.limit == 8


def test_a_tool_a_tool_hook_matches_stays_out_of_the_lane(tmp_path: Path) -> None:
    text = (
        "prompt: hi\nhooks: {pre_tool: [{match: [read_*], run: a}],"
        " post_tool: [{match: [lookup], run: b}]}\n"
    )
    lane = read_lane(task_from(tmp_path, text), TOOLS, 8)
    assert lane.tools == {"list_files"}


def test_a_stop_hook_changes_nothing(tmp_path: Path) -> None:
    lane = read_lane(task_from(tmp_path, "prompt: hi\nhooks: {stop: [{run: a}]}\n"), TOOLS, 8)
    assert lane.tools == {"read_file", "list_files", "lookup"}


def test_a_limit_of_one_makes_no_lane(tmp_path: Path) -> None:
    assert read_lane(task_from(tmp_path, "prompt: hi\n"), TOOLS, 1).tools == frozenset()


def test_the_session_runs_reads_at_once_and_a_write_alone(tmp_path: Path) -> None:
    concurrency = call_concurrency(task_from(tmp_path, "prompt: hi\n"), TOOLS, 3)
    assert concurrency.limit_of(ToolCall("lookup", {})) == 3
    assert concurrency.lane(ToolCall("write_to_file", {})) is None
