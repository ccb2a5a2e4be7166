"""Hooks end to end (DESIGN section 14): the real CLI, the fake model server, real shell hooks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    API_KEY,
    Done,
    Scenario,
    complete,
    log_schema_errors,
    processes_mentioning,
    run_all,
    tool_reply,
)

GUARD = """\
#!/bin/sh
# A pre_tool guard: the event arrives as JSON on stdin; exit 2 blocks the call.
if grep -q 'ran.txt'; then
  echo "ran.txt is off limits for $AGENT_RUNNER_TOOL" >&2
  exit 2
fi
exit 0
"""
SLOW_MARKER = "hook-that-never-ends-7c1f"
"""In the slow hook's command line, so the test can see that its process is gone."""


def _task(hooks: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"hooks": hooks, **more}


SCENARIOS = {
    "blocked": Scenario(
        task=_task({"pre_tool": [{"match": ["execute_command"], "run": "sh guard.sh"}]}),
        files={"guard.sh": GUARD},
        steps=[
            tool_reply("execute_command", command="echo hi > ran.txt"),
            tool_reply("execute_command", command="echo fine > other.txt"),
            complete(),
        ],
    ),
    "rewrite": Scenario(
        task=_task(
            {
                "pre_tool": [
                    {
                        "match": ["execute_*"],
                        "run": 'echo \'{"arguments": {"command": "echo rewritten > out.txt"}}\'',
                    }
                ]
            }
        ),
        steps=[tool_reply("execute_command", command="echo original > out.txt"), complete()],
    ),
    "bad_rewrite": Scenario(
        task=_task({"pre_tool": [{"run": 'echo \'{"arguments": {"cmd": 1}}\''}]}),
        steps=[tool_reply("execute_command", command="echo x > out.txt"), complete()],
    ),
    "post_tool": Scenario(
        task=_task(
            {
                "post_tool": [
                    {"match": ["write_to_file"], "run": 'echo "FORMATTED $(wc -c < a.txt) bytes"'},
                    {"match": ["read_file"], "run": "echo NEVER FOR WRITES"},
                ]
            }
        ),
        steps=[tool_reply("write_to_file", path="a.txt", content="hello"), complete()],
    ),
    "stop": Scenario(
        task=_task(
            {"stop": [{"run": "test -f done.txt || { echo 'done.txt is missing' >&2; exit 2; }"}]},
            success={"retries": 1},
        ),
        steps=[
            complete("first try"),
            tool_reply("write_to_file", path="done.txt", content="yes"),
            complete("second try"),
        ],
    ),
    "stop_secret": Scenario(
        task=_task({"stop": [{"run": "cat key.txt >&2; exit 2"}]}, success={"retries": 1}),
        files={"key.txt": f"the key is {API_KEY}\n"},
        steps=[complete("first try"), complete("second try")],
    ),
    "stop_exhausted": Scenario(
        task=_task({"stop": [{"run": "echo 'not yet' >&2; exit 2"}]}),
        steps=[complete("too early")],
    ),
    "timeout": Scenario(
        task=_task(
            {
                "pre_tool": [
                    {
                        "run": f"python3 -c 'import time; time.sleep(300)' {SLOW_MARKER} & wait",
                        "timeout": "1s",
                    }
                ]
            }
        ),
        steps=[tool_reply("execute_command", command="echo went on > after.txt"), complete()],
    ),
    "session": Scenario(
        task=_task(
            {
                "session_start": [
                    {"run": 'echo "TASK CONTEXT for $AGENT_RUNNER_EVENT"; env > env.txt'},
                    {"run": "cat key.txt >&2"},  # a secret in a hook's output
                ],
                "session_end": [{"run": "cat > ended.json; exit 7"}],
            }
        ),
        files={"key.txt": f"the key is {API_KEY}\n"},
        extra_files={
            "agent-runner.yaml": "hooks:\n  session_start: [{run: 'echo CONFIG CONTEXT'}]\n"
        },
        steps=[complete()],
    ),
    "bad_config": Scenario(
        task={},
        extra_files={"agent-runner.yaml": "hooks:\n  pre_tool: [{run: x, timout: 3}]\n"},
        args=["validate", "t.yaml"],
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def _hooks(done: Done) -> list[dict[str, Any]]:
    return done.events("hook")


def _sent(done: Done, index: int) -> str:
    """Everything the model was sent in request `index`, as one text."""
    return json.dumps(done.requests[index].body["messages"])


def test_a_blocking_pre_tool_hook_stops_the_call_and_tells_the_model_why(runs):
    done = runs["blocked"]
    assert done.code == 0, done.explain()
    workdir = done.root / "w"
    assert not (workdir / "ran.txt").exists()
    assert (workdir / "other.txt").read_text() == "fine\n"
    first, second = done.events("tool_call")
    assert first["is_error"] and "ran.txt is off limits for execute_command" in first["result"]
    assert not second["is_error"]
    assert "ran.txt is off limits" in _sent(done, 1)
    outcomes = [(h["event"], h["tool"], h["exit_code"], h["outcome"]) for h in _hooks(done)]
    assert outcomes == [
        ("pre_tool", "execute_command", 2, "blocked"),
        ("pre_tool", "execute_command", 0, "ok"),
    ]


def test_a_pre_tool_hook_rewrites_the_arguments(runs):
    done = runs["rewrite"]
    assert done.code == 0, done.explain()
    assert (done.root / "w" / "out.txt").read_text() == "rewritten\n"
    (event,) = done.events("tool_call")
    assert event["arguments"] == {"command": "echo rewritten > out.txt"}
    assert "changed this call's arguments" in event["result"]
    assert [h["outcome"] for h in _hooks(done)] == ["rewrote"]


def test_a_rewrite_that_does_not_fit_the_schema_blocks_the_call(runs):
    done = runs["bad_rewrite"]
    assert not (done.root / "w" / "out.txt").exists()
    (event,) = done.events("tool_call")
    assert event["is_error"] and "do not fit the tool's schema" in event["result"]


def test_post_tool_output_reaches_the_model(runs):
    done = runs["post_tool"]
    assert done.code == 0, done.explain()
    (event,) = done.events("tool_call")
    assert "[post_tool hook output]\nFORMATTED 5 bytes" in event["result"]
    assert "FORMATTED 5 bytes" in _sent(done, 1)
    assert "NEVER FOR WRITES" not in _sent(done, 1)
    assert [(h["event"], h["tool"]) for h in _hooks(done)] == [("post_tool", "write_to_file")]


def test_a_stop_hook_refuses_then_accepts_the_completion(runs):
    done = runs["stop"]
    assert done.code == 0, done.explain()
    assert done.task()["status"] == "passed"
    stops = [h for h in _hooks(done) if h["event"] == "stop"]
    assert [h["outcome"] for h in stops] == ["blocked", "ok"]
    assert "done.txt is missing" in _sent(done, 1)


def test_a_stop_hook_refusal_reaches_the_model_with_secrets_masked(runs):
    done = runs["stop_secret"]
    sent = _sent(done, 1)
    assert "the key is" in sent and API_KEY not in sent


def test_a_stop_hook_refusal_counts_against_the_retries(runs):
    done = runs["stop_exhausted"]
    assert done.code == 1, done.explain()
    task = done.task()
    assert task["status"] == "failed"
    assert "not yet" in task["reason"]


def test_a_hook_that_times_out_is_killed_with_its_group_and_the_call_goes_on(runs):
    done = runs["timeout"]
    assert done.code == 0, done.explain()
    assert (done.root / "w" / "after.txt").read_text() == "went on\n"
    (hook,) = _hooks(done)
    assert hook["timed_out"] and hook["exit_code"] is None and hook["outcome"] == "warning"
    assert "timed out" in done.stdout + done.stderr
    assert processes_mentioning(SLOW_MARKER) == []


def test_session_hooks_add_context_and_see_the_end(runs):
    done = runs["session"]
    assert done.code == 0, done.explain()
    first = done.requests[0].body["messages"][-1]["content"]
    assert first.index("CONFIG CONTEXT") < first.index("TASK CONTEXT for session_start")
    ended = json.loads((done.root / "w" / "ended.json").read_text())
    assert ended["event"] == "session_end" and ended["status"] == "passed"
    assert ended["session_id"] == done.log().header["session_id"]
    end_hook = _hooks(done)[-1]
    assert end_hook["event"] == "session_end" and end_hook["exit_code"] == 7
    assert end_hook["outcome"] == "ok"  # its exit status is ignored


def test_hooks_get_the_minimal_environment_of_execute_command(runs):
    env = (runs["session"].root / "w" / "env.txt").read_text()
    assert API_KEY not in env
    assert "AGENT_RUNNER_SESSION_ID=" in env and "AGENT_RUNNER_EVENT=session_start" in env


def test_every_hook_run_is_a_valid_hook_event(runs):
    for name, done in runs.items():
        if name == "bad_config":
            continue
        assert _hooks(done), name
        assert log_schema_errors(done.log().path) == [], name


def test_a_secret_a_hook_prints_is_masked_in_the_log(runs):
    done = runs["session"]
    (leaky,) = [h for h in _hooks(done) if h["command"] == "cat key.txt >&2"]
    assert leaky["stderr"] == "the key is ***\n"
    assert API_KEY not in done.log().path.read_text(encoding="utf-8")


def test_log_show_prints_each_hook_run(runs, run_cli):
    done = runs["blocked"]
    shown = run_cli("log", "show", str(done.log().path))
    assert shown.returncode == 0, shown.stderr
    assert "[hook pre_tool execute_command `sh guard.sh`: blocked, exit 2]" in shown.stdout


def test_a_bad_hook_in_the_config_file_is_a_configuration_error(runs):
    done = runs["bad_config"]
    assert done.code == 2, done.explain()
    assert "hooks.pre_tool.0.timout" in done.stderr
