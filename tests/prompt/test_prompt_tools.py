"""The prompt tells the truth about the tools a task really has (issue 13, "The prompt"), pinned
by a second golden file: the real workspace tools with write_to_file and execute_command denied.

Regenerate after an intended change with: UPDATE_GOLDEN=1 pytest tests/prompt/test_prompt_tools.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.prompt import build_sections, host_facts, render_sections
from runner.run.session.tools import list_task_tools
from runner.settings import load_settings
from runner.task import load_tasks
from runner.toolcall import ToolSpec
from tests.prompt.test_golden_prompt import FACTS

GOLDEN = Path(__file__).parent / "golden" / "system-prompt-denied.md"
DENY_BOTH = "tools: {deny: [write_to_file, execute_command]}\n"


def prompt(tmp_path: Path, policy: str = "") -> str:
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "main.py").write_text("print('hi')\n", encoding="utf-8")
    task_file = tmp_path / "t.yaml"
    task_file.write_text(f"prompt: Fix it.\nworkdir: project\n{policy}", encoding="utf-8")
    (task,) = load_tasks([task_file])
    tools = list_task_tools(task, load_settings(config_file=None))
    servers: dict[str, list[ToolSpec]] = {}
    for spec in tools:
        servers.setdefault(spec.server, []).append(spec)
    sections = build_sections(
        workdir=workdir,
        prompt_dirs=[],
        inline_sections={},
        servers=servers,
        tools=tools,
        facts=FACTS,
    )
    return render_sections(sections).replace(str(workdir), "<WORKDIR>")


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path


def test_the_replace_in_file_example_shows_a_diff(isolated: Path) -> None:
    text = prompt(isolated)
    example = text.split("## replace_in_file", 1)[1].split("Example:", 1)[1].split("##", 1)[0]
    assert "<diff><<<<<<< SEARCH" in example and ">>>>>>> REPLACE</diff>" in example


def test_non_interactive_is_said_once(isolated: Path) -> None:
    assert prompt(isolated).count("non-interactive") == 1


def test_the_shell_is_the_one_commands_run_under() -> None:
    assert host_facts({"SHELL": "/bin/bash"}).shell == "/bin/sh"


def test_denied_tools_are_not_pointed_at_and_commands_are_not_promised(isolated: Path) -> None:
    text = prompt(isolated, DENY_BOTH)
    assert "write_to_file" not in text and "execute_command" not in text
    assert "run commands" not in text
    assert "## replace_in_file" in text and "## read_file" in text
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")
