"""What a new user tripped on (issue 28), each through the CLI against the fake model server.

All scenarios run at once (run_all), so the module costs about as much as its slowest run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.run.plan.outdir import CONTAINER_MARKERS
from tests.e2e.conftest import (
    MODEL,
    NO_WORKSPACE,
    Done,
    Scenario,
    call,
    clean_env,
    complete,
    default_args,
    reply,
    run_all,
    tool_reply,
)
from tests.fakes.model_server import fault

VALIDATE_TASK = """\
name: t
prompt: Do it.
workdir: w
limits: {max_turnz: 3}
skills: [no-such-skills]
permissions:
  allow:
    - "execute_comand(npm test)"
"""
DOWN_URL = "http://127.0.0.1:9/mcp"
"""The discard port: nothing listens there."""
GAVE_UP = "The build needs network access,\nwhich this runner has no sk-live-000111222333 for."

SCENARIOS = {
    # 1. The scenario folder is the repository (it has .git); the workdir `w` is a subfolder.
    "repo_ignores": Scenario(
        task={},
        files={
            "main.py": "needle",
            "node_modules/a.js": "needle",
            "secret.txt": "needle",
            "src/lib.py": "",
        },
        extra_files={".git/info/exclude": "secret.txt\n", ".gitignore": "node_modules/\n"},
        steps=[
            tool_reply("list_files", path=".", recursive="true"),
            tool_reply("search_files", path=".", regex="needle"),
            complete(),
        ],
    ),
    # 3 and 6. The first task gives up; --fail-fast keeps the other two from starting.
    "fail_fast": Scenario(
        task={
            "defaults": {**NO_WORKSPACE, "workdir": "w"},
            "tasks": [{"name": n, "prompt": f"Task {n}."} for n in ("first", "second", "third")],
        },
        steps=[reply(call("attempt_completion", result=GAVE_UP, status="failure"))],
        default=complete(),
        args=default_args("--fail-fast"),
        env={
            "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": "step_summary.md",
            "SECRET_TOKEN": "sk-live-000111222333",
        },
    ),
    # 4. sysfs refuses new folders to everyone (EPERM for root, EACCES for others).
    "unwritable_out": Scenario(
        task=NO_WORKSPACE,
        default=complete(),
        args=["run", "t.yaml", "--model", MODEL, "--out", "/sys/agent-runner-out"],
    ),
    # 8. A configuration error under --output json.
    "json_config_error": Scenario(
        task={**NO_WORKSPACE, "model": "opnai:gpt-4.1"},
        default=complete(),
        args=["run", "t.yaml", "--out", "OUT", "--output", "json"],
    ),
    # 5. Every problem of every check, in one run, each at its own line.
    "validate_all": Scenario(
        task=VALIDATE_TASK,
        extra_files={"q.yaml": 'name: q\nprompt: "unterminated\nworkdir: w\n'},
        args=["validate", "t.yaml", "q.yaml"],
    ),
    # 9. Polish.
    "prompt_example": Scenario(task={}, args=["prompt", "t.yaml"]),
    "retry_line": Scenario(
        task=NO_WORKSPACE,
        steps=[fault("rate_limit", retry_after="0"), complete()],
    ),
    "turn_limit": Scenario(
        task={"limits": {"max_turns": 1}},
        steps=[tool_reply("list_files", path="."), reply("My report: nothing done.")],
    ),
    "remote_down": Scenario(
        task={"extensions": {"api": {"type": "streamable_http", "uri": DOWN_URL}}},
        default=complete(),
        env={"AGENT_RUNNER_RETRY__MAX_ATTEMPTS": "2"},
    ),
    "sub_agent": Scenario(
        task={
            "agents": {
                "helper": {
                    "description": "Helps.",
                    "prompt": "You help.",
                    "tools": {"allow": ["read_file"]},
                }
            }
        },
        steps=[reply(call("sub_agent", agent="helper", task="HELPER-TASK")), complete("done")],
        routes={"HELPER-TASK": [complete("helped")]},
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_tasks_fail_fast_kept_from_starting_are_reported_as_skipped(runs: dict[str, Done]) -> None:
    done = runs["fail_fast"]
    assert done.code == 1, done.explain()
    summary = done.summary()
    assert [t["status"] for t in summary["tasks"]] == ["failed", "skipped", "skipped"]
    assert (summary["passed"], summary["failed"], summary["skipped"]) == (0, 1, 2)
    second = done.task("second")
    assert second["kind"] == "fail_fast"
    assert "--fail-fast stopped the run after first" in second["reason"]
    suite = done.junit().find("testsuite")
    assert suite is not None and suite.get("skipped") == "2"
    skipped = done.testcase("third").find("skipped")
    assert skipped is not None and "--fail-fast" in (skipped.get("message") or "")
    assert "1 passed" not in done.stdout and "2 skipped" in done.stdout


def test_the_agents_own_reason_for_failing_is_in_every_report(runs: dict[str, Done]) -> None:
    done = runs["fail_fast"]
    said = "the agent reported failure: The build needs network access, which this runner has no"
    failure = done.testcase("first").find("failure")
    assert failure is not None and said in (failure.get("message") or "")
    step_summary = (done.root / "step_summary.md").read_text(encoding="utf-8")
    assert said in done.stdout and said in step_summary
    everything = done.stdout + done.stderr + step_summary + (done.out / "junit.xml").read_text()
    shown = [line for line in everything.splitlines() if not line.startswith("::add-mask::")]
    assert not [line for line in shown if "sk-live-000111222333" in line]


def test_an_unwritable_out_folder_stops_the_run_before_any_task_starts(
    runs: dict[str, Done],
) -> None:
    done = runs["unwritable_out"]
    assert done.code == 2, done.explain()
    assert "START" not in done.stdout and not done.requests
    assert "--out /sys/agent-runner-out: cannot create or write this folder" in done.stderr
    assert "session log" not in done.stderr
    if any(marker.exists() for marker in CONTAINER_MARKERS):
        assert '--user "$(id -u):$(id -g)"' in done.stderr


def test_a_configuration_error_under_output_json_is_a_json_document(
    runs: dict[str, Done],
) -> None:
    done = runs["json_config_error"]
    assert done.code == 2, done.explain()
    document = json.loads(done.stdout)
    assert document["exit_code"] == 2
    assert "opnai" in document["error"]


def test_validate_reports_every_problem_of_every_check_at_its_own_line(
    runs: dict[str, Done],
) -> None:
    done = runs["validate_all"]
    assert done.code == 2, done.explain()
    lines = done.stderr.splitlines()
    root = done.root
    assert f"{root}/t.yaml:4:10: limits.max_turnz: unknown key" in lines[0]
    expected = {
        f"{root}/t.yaml:5:10: skills[0]: the declared skill folder does not exist",
        f"{root}/t.yaml:8:7: permissions.allow[0]: the rule 'execute_comand(npm test)'",
        "did you mean 'execute_command'?",
        f"{root}/q.yaml:2:9: not valid YAML: while scanning a quoted scalar",
        "found unexpected end of stream (at line 4, column 1)",
    }
    assert [part for part in expected if part not in done.stderr] == []
    assert lines[-1] == "4 problem(s) found"


def test_the_repository_ignore_files_above_the_workdir_hide_files_from_listings(
    runs: dict[str, Done],
) -> None:
    done = runs["repo_ignores"]
    assert done.code == 0, done.explain()
    system = _text(done.requests[0].body["messages"][0])
    listed = _text(done.requests[1].body["messages"][-1])
    found = _text(done.requests[2].body["messages"][-1])
    for shown in (system, listed, found):
        assert "main.py" in shown
        assert "node_modules" not in shown
        assert "secret.txt" not in shown
    assert "src/lib.py" in system and "src/lib.py" in listed


def test_the_write_to_file_example_writes_content_not_a_file_name(runs: dict[str, Done]) -> None:
    done = runs["prompt_example"]
    assert done.code == 0, done.explain()
    assert "<path>src/main.py</path>" in done.stdout
    assert "<content>src/main.py</content>" not in done.stdout


def test_a_retry_line_names_the_http_status_once(runs: dict[str, Done]) -> None:
    done = runs["retry_line"]
    assert done.code == 0, done.explain()
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("RETRY")]
    assert line.count("429") == 1, line


def test_a_turn_limit_reason_counts_the_final_report_call(runs: dict[str, Done]) -> None:
    done = runs["turn_limit"]
    assert done.code == 5, done.explain()
    task = done.task()
    assert task["turns"] == 2
    assert task["reason"].startswith("turn limit reached (1/1); then one last call, tools off")


def test_a_remote_server_that_is_down_is_retried_and_named_by_its_url(
    runs: dict[str, Done],
) -> None:
    done = runs["remote_down"]
    assert done.code == 4, done.explain()
    assert f"MCP server 'api' at {DOWN_URL} is unreachable" in done.stdout + done.stderr
    assert "(1 attempt left)" in done.stdout + done.stderr
    assert f"MCP server 'api' at {DOWN_URL} failed to start" in done.stdout


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=root,
        env=clean_env(root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_log_show_of_a_run_folder_shows_each_session_with_its_children(
    runs: dict[str, Done],
) -> None:
    done = runs["sub_agent"]
    assert done.code == 0, done.explain()
    shown = _cli(done.root, "log", "show", "OUT")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("=== ") == 1  # the parent; the child is shown inside it
    assert "helped" in shown.stdout


def test_the_html_viewer_titles_a_child_by_its_agent(runs: dict[str, Done]) -> None:
    done = runs["sub_agent"]
    exported = _cli(done.root, "log", "export", "--format", "html", "OUT")
    assert exported.returncode == 0, exported.stderr
    assert "sub-agent session: helper (sub-agent of t) <span" in exported.stdout


@pytest.mark.parametrize(
    ("command", "flag", "words"),
    [
        (["run"], "--sandbox-backend", "what confines"),
        (["prompt"], "--param", "set a declared param"),
        (["log", "export"], "--format", "default: json"),
        (["report", "merge"], "--output", "the merged JUnit file"),
    ],
)
def test_every_flag_has_help_text(
    command: list[str], flag: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.cli import main

    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert flag in text and words in text
