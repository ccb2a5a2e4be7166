"""`agent-runner prompt TASK` starts the task's servers and prints the real catalogue."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

HELLO = REPO / "examples" / "tasks" / "hello.yaml"
ORDER = [
    "ROLE",
    "OBJECTIVE",
    "RULES",
    "SYSTEM INFORMATION",
    "WORKSPACE FILES",
    "BUDGET AND CHECK",
    "MCP SERVERS",
    "TOOL USE",
    "TOOLS",
]


def titles(text: str) -> list[str]:
    return re.findall(r"^# (.+)$", text, flags=re.MULTILINE)


def test_prompt_prints_every_section_in_order_with_the_workspace_tools(run_cli):
    result = run_cli("prompt", str(HELLO))
    assert result.returncode == 0, result.stderr
    assert titles(result.stdout) == ORDER
    assert "- workspace: " in result.stdout
    tools = re.findall(r"^## (\w+)$", result.stdout, flags=re.MULTILINE)
    # The task allows only these; denied tools are not offered to the model.
    assert sorted(tools) == ["attempt_completion", "list_files", "read_file", "search_files"]


def test_prompt_with_the_workspace_off_offers_only_attempt_completion(run_cli, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text("prompt: hi\nextensions: {workspace: {enabled: false}}\n", encoding="utf-8")
    result = run_cli("prompt", str(task))
    assert result.returncode == 0, result.stderr
    assert "only tool is attempt_completion" in result.stdout
    assert re.findall(r"^## (\w+)$", result.stdout, flags=re.MULTILINE) == ["attempt_completion"]


def test_prompt_names_the_check_with_its_secrets_masked(run_cli, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text(
        "prompt: hi\n"
        "extensions: {workspace: {envs: {API_TOKEN: tok-prompt-secret-42}}}\n"
        "limits: {max_turns: 9}\n"
        "success: {check: 'curl -H tok-prompt-secret-42 localhost && make test'}\n",
        encoding="utf-8",
    )
    result = run_cli("prompt", str(task))
    assert result.returncode == 0, result.stderr
    assert "at most 9 turns" in result.stdout
    assert "    curl -H *** localhost && make test" in result.stdout
    assert "tok-prompt-secret-42" not in result.stdout


def test_prompt_of_a_suite_needs_a_task_name(run_cli):
    suite = REPO / "examples" / "tasks" / "docs-suite.yaml"
    result = run_cli("prompt", str(suite))
    assert result.returncode == 2
    assert "--name" in result.stderr and "docstrings" in result.stderr
    named = run_cli("prompt", str(suite), "--name", "readme")
    assert named.returncode == 0, named.stderr
    assert "# STYLE\n\nWrite plain English" in named.stdout


def test_prompt_with_a_required_server_that_fails_exits_4(run_cli, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text(
        "prompt: hi\nextensions: {broken: {cmd: /nonexistent/server}}\n", encoding="utf-8"
    )
    result = run_cli("prompt", str(task))
    assert result.returncode == 4
    assert "broken" in result.stderr and "Traceback" not in result.stderr


def test_prompt_lists_skills_before_the_catalogue_and_offers_load_skill(run_cli):
    guarded = REPO / "examples" / "tasks" / "guarded-fix.yaml"
    result = run_cli("prompt", str(guarded))
    assert result.returncode == 0, result.stderr
    found = titles(result.stdout)
    assert found.index("SKILLS") == found.index("MCP SERVERS") - 1
    assert "- python-testing: How to run and read this project's Python unit tests" in result.stdout
    assert "Run `python -m unittest -q` in the project folder" not in result.stdout  # the body
    assert "## load_skill" in result.stdout
    servers = result.stdout.split("# MCP SERVERS")[1].split("# TOOL USE")[0]
    assert "- workspace: " in servers and "load_skill" not in servers  # the runner's own tool


def test_prompt_of_a_task_with_agents_offers_sub_agent_with_each_agent(run_cli):
    result = run_cli("prompt", str(REPO / "examples" / "tasks" / "docs-with-agents.yaml"))
    assert result.returncode == 0, result.stderr
    tools = re.findall(r"^## (\w+)$", result.stdout, flags=re.MULTILINE)
    assert "sub_agent" in tools and "execute_command" not in tools
    assert "- agent (required, one of: reader, writer)" in result.stdout
    assert "- reader: Reads code and answers one question" in result.stdout
    assert "- writer: Writes or rewrites one documentation file" in result.stdout
    assert "sub_agent" not in result.stdout.split("# MCP SERVERS")[1].split("# TOOL USE")[0]


def test_prompt_stats_break_the_first_request_down_by_section_and_by_tool(run_cli):
    result = run_cli("prompt", str(HELLO), "--stats", "--output", "json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["mode"] == "xml"
    assert [row["title"] for row in stats["sections"]] == ORDER
    names = [row["name"] for row in stats["tools"]]
    assert sorted(names) == ["attempt_completion", "list_files", "read_file", "search_files"]
    assert sum(stats["parts"].values()) == stats["total_tokens"] <= 1500
    text = run_cli("prompt", str(HELLO), "--stats", "--tool-mode", "native", "--model", "openai:x")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("First request (native mode): about ")
    assert "By tool:" in text.stdout and "read_file" in text.stdout
