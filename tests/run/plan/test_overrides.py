"""The command line's task limits and policy over a task's own (runner.run.plan.overrides)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.run.plan import APPENDED_SECTION, TaskOverrides
from runner.task import Task, load_tasks

TASK = """\
name: t
prompt: Do it.
limits: {max_turns: 10, max_tokens: 500}
permissions: {allow: ["execute_command(make *)"], deny: ["write_to_file(.git/**)"]}
sections: {APPENDED: Be brief.}
"""


def _task(tmp_path: Path) -> Task:
    path = tmp_path / "t.yaml"
    path.write_text(TASK, encoding="utf-8")
    [task] = load_tasks([path])
    return task


def test_limit_flags_replace_the_tasks_limits_and_keep_the_rest(tmp_path: Path) -> None:
    task = TaskOverrides(max_turns=3, max_cost_usd=0.5, timeout="2m").apply(_task(tmp_path))
    limits = task.spec.limits
    assert (limits.max_turns, limits.max_tokens, limits.max_cost_usd) == (3, 500, 0.5)
    assert limits.timeout == 120


def test_rule_flags_add_to_the_tasks_rules(tmp_path: Path) -> None:
    overrides = TaskOverrides(allow=("read_file(src/**)",), deny=("execute_command(git push*)",))
    permissions = overrides.apply(_task(tmp_path)).spec.permissions
    assert permissions.allow == ["execute_command(make *)", "read_file(src/**)"]
    assert permissions.deny == ["write_to_file(.git/**)", "execute_command(git push*)"]


def test_an_appended_system_prompt_goes_after_the_tasks_own_appended_text(
    tmp_path: Path,
) -> None:
    task = TaskOverrides(append_system_prompt="Answer in French.").apply(_task(tmp_path))
    assert task.spec.sections[APPENDED_SECTION] == "Be brief.\n\nAnswer in French."


def test_no_flag_leaves_the_task_as_it_is(tmp_path: Path) -> None:
    task = _task(tmp_path)
    assert TaskOverrides().apply(task) is task


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (TaskOverrides(max_tokens=0), "--max-tokens 0"),
        (TaskOverrides(max_cost_usd=-1.0), "--task-max-cost-usd -1.0"),
        (TaskOverrides(timeout="later"), "--timeout"),
        (TaskOverrides(allow=("read_file(",)), "--allow-tool"),
    ],
)
def test_a_bad_flag_is_a_usage_error_that_names_it(overrides: TaskOverrides, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace("(", r"\(")):
        overrides.check()
