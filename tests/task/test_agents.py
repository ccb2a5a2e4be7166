"""`agents:` in task files, suites and the config file (DESIGN section 13): loading and the
`validate` command's file:line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import TaskFileError
from runner.task import load_tasks

READER = {"description": "Reads.", "prompt": "You read.", "tools": {"allow": ["read_file"]}}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_task_loads_its_agents_with_their_defaults(tmp_path: Path) -> None:
    task_file = write(
        tmp_path / "t.yaml",
        "prompt: go\nagents:\n  reader: {description: Reads., prompt: You read.}\n",
    )
    (task,) = load_tasks([task_file])
    reader = task.spec.agents["reader"]
    assert reader.tools.allow == ["*"] and reader.model is None
    assert reader.limits.max_turns == 20
    assert task.spec.limits.max_depth == 1 and task.spec.limits.max_parallel_agents == 4


def test_config_agents_are_merged_under_the_tasks_own(tmp_path: Path) -> None:
    task_file = write(
        tmp_path / "t.yaml",
        "prompt: go\nagents:\n  reader: {prompt: Task prompt.}\n",
    )
    (task,) = load_tasks([task_file], config_agents={"reader": READER, "other": READER})
    assert set(task.spec.agents) == {"reader", "other"}
    assert task.spec.agents["reader"].prompt == "Task prompt."
    assert task.spec.agents["reader"].tools.allow == ["read_file"]


def test_a_bad_config_agent_is_named_by_its_key(tmp_path: Path) -> None:
    task_file = write(tmp_path / "t.yaml", "prompt: go\n")
    with pytest.raises(TaskFileError) as caught:
        load_tasks([task_file], config_agents={"reader": {**READER, "promt": "x"}})
    assert [str(p) for p in caught.value.problems] == [
        "config file: agents.reader.promt: unknown key "
        "(fix `agents:` in agent-runner.yaml (or the --config file))"
    ]


@pytest.mark.parametrize(
    ("agent", "line", "message"),
    [
        ("    promt: x\n", 6, "agents.reader.promt: unknown key (did you mean 'prompt'?)"),
        ("    model: nope:m\n", 6, "agents.reader.model: unknown model provider 'nope'"),
        ("    limits: {max_turns: 0}\n", 6, "agents.reader.limits.max_turns:"),
    ],
)
def test_agent_errors_name_the_file_and_line(
    tmp_path: Path, agent: str, line: int, message: str
) -> None:
    text = "prompt: go\nagents:\n  reader:\n    description: Reads.\n    prompt: You read.\n"
    task_file = write(tmp_path / "t.yaml", text + agent)
    with pytest.raises(TaskFileError) as caught:
        load_tasks([task_file])
    (problem,) = caught.value.problems
    assert str(problem).startswith(f"{task_file}:{line}:")
    assert message in str(problem)


def test_an_agent_needs_a_description_and_a_prompt(tmp_path: Path) -> None:
    task_file = write(tmp_path / "t.yaml", "prompt: go\nagents:\n  reader: {tools: {}}\n")
    with pytest.raises(TaskFileError) as caught:
        load_tasks([task_file])
    fields = sorted(p.field for p in caught.value.problems)
    assert fields == ["agents.reader.description", "agents.reader.prompt"]


def test_validate_reports_allowlists_that_match_no_tool(run_cli, tmp_path: Path) -> None:
    write(
        tmp_path / "t.yaml",
        "prompt: go\n"
        "tools: {deny: [write_to_file]}\n"
        "agents:\n"
        "  reader:\n"
        "    description: Reads.\n"
        "    prompt: You read.\n"
        "    tools: {allow: [read_file, raed_file]}\n"
        "  writer:\n"
        "    description: Writes.\n"
        "    prompt: You write.\n"
        "    tools: {allow: [write_to_file]}\n",
    )
    result = run_cli("validate", "t.yaml")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{tmp_path / 't.yaml'}:7:")
    assert "agents.reader.tools.allow[1]: 'raed_file' matches no tool" in lines[0]
    assert lines[1].startswith(f"{tmp_path / 't.yaml'}:11:")
    assert "agents.writer.tools.allow: the allowlist matches no tool the task may call" in lines[1]


def test_a_run_with_an_allowlist_that_matches_no_tool_is_a_configuration_error(
    run_cli, tmp_path: Path
) -> None:
    write(
        tmp_path / "t.yaml",
        "prompt: go\nagents:\n  reader:\n    description: Reads.\n    prompt: You read.\n"
        "    tools: {allow: [raed_file]}\n",
    )
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    result = run_cli("run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT", env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "'raed_file' matches no tool" in result.stdout + result.stderr


def test_validate_names_a_bad_agent_of_the_config_file(run_cli, tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", "prompt: go\n")
    write(
        tmp_path / "cfg.yaml",
        "agents:\n  reader: {description: Reads., prompt: You read., promt: x}\n",
    )
    result = run_cli("validate", "t.yaml", "--config", "cfg.yaml")
    assert result.returncode == 2, result.stderr
    assert "config file: agents.reader.promt: unknown key" in result.stderr
