"""What validate and run check of a task's hooks, skills and rules before a server starts."""

from __future__ import annotations

from pathlib import Path

from runner.run.guard.features import feature_problems, unmatched_hook_globs, with_config_hooks
from runner.task import load_tasks
from runner.toolcall import ToolSpec


def task_from(tmp_path: Path, text: str):
    file = tmp_path / "t.yaml"
    file.write_text(text, encoding="utf-8")
    (task,) = load_tasks([file])
    return task


def test_rules_for_built_in_tools_are_checked_without_starting_anything(tmp_path: Path) -> None:
    task = task_from(tmp_path, "prompt: hi\npermissions: {deny: [read_fil(x)]}\n")
    (problem,) = feature_problems(task)
    assert problem.field == "permissions.deny[0]" and "read_fil(x)" in problem.message


def test_with_the_workspace_off_no_rule_can_match(tmp_path: Path) -> None:
    text = "prompt: hi\nextensions: {workspace: {enabled: false}}\n"
    task = task_from(tmp_path, text + "permissions: {allow: [read_file]}\n")
    assert len(feature_problems(task)) == 1


def test_rules_for_mcp_tools_wait_for_the_run(tmp_path: Path) -> None:
    text = "prompt: hi\nextensions: {gh: {cmd: gh-mcp}}\npermissions: {deny: [create_issue]}\n"
    assert feature_problems(task_from(tmp_path, text)) == []


def test_config_hooks_run_before_the_tasks_own(tmp_path: Path) -> None:
    task = task_from(tmp_path, "prompt: hi\nhooks: {stop: [{run: task-check}]}\n")
    (merged,) = with_config_hooks([task], {"stop": [{"run": "config-check"}]})
    assert [hook.run for hook in merged.spec.hooks.stop] == ["config-check", "task-check"]


def test_a_hook_glob_that_names_no_tool_is_reported(tmp_path: Path) -> None:
    text = "prompt: hi\nhooks: {pre_tool: [{match: [exec_command, read_*], run: g}]}\n"
    task = task_from(tmp_path, text)
    found = unmatched_hook_globs(task, [ToolSpec("read_file", "")])
    assert found == ["pre_tool hook `g`: match 'exec_command' names no tool"]
