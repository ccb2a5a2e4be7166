"""A lean prompt end to end (DESIGN 28): what `prompt --stats` says a request carries is what the
fake model server receives; the default task's first request stays under 1,500 tokens in both
tool modes; and a server of 120 tools is deferred behind `find_tools`, whose loaded tools are
called, survive a compaction, and are left out of native requests until loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.llm.providers.streaming import estimate_tokens
from tests.e2e.conftest import (
    API_KEY,
    REPO,
    Done,
    Scenario,
    clean_env,
    complete,
    log_schema_errors,
    run_all,
    run_one,
    tool_reply,
)
from tests.fakes.many_tools_server import NAMES
from tests.fakes.many_tools_server import SCRIPT as FORGE
from tests.fakes.model_server import RecordedRequest, Step, fault, reply
from tests.fakes.native_wire import call as native_call

OPENAI = "openai:gpt-4.1"
ANTHROPIC = "anthropic:claude-sonnet-4-5"
DEFAULT_BUDGET = 1500
FORGE_EXT = {"forge": {"cmd": sys.executable, "args": [str(FORGE)]}}
NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}
"""The example project's check must leave no __pycache__ behind (nor change its listing)."""


def native(*calls: Any) -> Step:
    return reply("", tool_calls=tuple(calls))


def native_done() -> Step:
    return native(native_call("attempt_completion", {"result": "done", "status": "success"}))


def carried(body: dict[str, Any]) -> list[Any]:
    """What a request carries, as the wire has it: system, messages and tool definitions."""
    system = body.get("system")
    return [*([system] if system else []), *body["messages"], *(body.get("tools") or [])]


def body_tokens(body: dict[str, Any]) -> int:
    """The project's estimate of a request: the JSON of what it carries, keys and all."""
    return estimate_tokens(json.dumps(carried(body), ensure_ascii=False))


def _texts(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [text for item in node for text in _texts(item)]
    if isinstance(node, dict) and "text" in node and node.get("type") == "text":
        return [node["text"]]
    if isinstance(node, dict) and "content" in node:
        return _texts(node["content"])
    return []


def content_tokens(body: dict[str, Any]) -> int:
    """The estimate of what the accounting counts: the texts of the system prompt and the
    messages, and each tool definition's JSON (without Anthropic's cache marks)."""
    texts = _texts(body.get("system")) + _texts(body["messages"])
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in body.get("tools") or []]
    return estimate_tokens("".join(texts)) + sum(
        estimate_tokens(json.dumps(t, ensure_ascii=False)) for t in tools
    )


def system_text(request: RecordedRequest) -> str:
    body = request.body
    if "system" in body:
        return "".join(_texts(body["system"]))
    return str(body["messages"][0]["content"])


def tool_names(request: RecordedRequest) -> list[str]:
    tools = request.body.get("tools") or []
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


def anthropic_env() -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": API_KEY}


def example(name: str, model: str, steps: list[Step], *more: str) -> Scenario:
    path = REPO / "examples" / "tasks" / name
    return Scenario(
        steps=steps,
        default=steps[-1],
        args=["run", str(path), "--model", model, "--out", "OUT", *more],
        env={**NO_BYTECODE, **(anthropic_env() if model == ANTHROPIC else {})},
    )


SCENARIOS = {
    "default-xml": Scenario(task={"model": OPENAI}, steps=[complete()], args=["run", "t.yaml"]),
    "default-native-openai": Scenario(
        task={"model": OPENAI, "tool_mode": "native"}, steps=[native_done()], args=["run", "t.yaml"]
    ),
    "default-native-anthropic": Scenario(
        task={"model": ANTHROPIC, "tool_mode": "native"},
        steps=[native_done()],
        args=["run", "t.yaml"],
        env=anthropic_env(),
    ),
    "hello-xml": example("hello.yaml", OPENAI, [complete("average")]),
    "fix-native": example(
        "fix-failing-test.yaml", ANTHROPIC, [native_done()], "--tool-mode", "native"
    ),
    "forge-xml": Scenario(
        task={"model": OPENAI, "extensions": FORGE_EXT},
        steps=[
            tool_reply("find_tools", query="get_issue"),
            tool_reply("get_issue", owner="octo", repo="demo", number="7"),
            complete("issue 7 read"),
        ],
        args=["run", "t.yaml"],
    ),
    "forge-never": Scenario(
        task={"model": OPENAI, "extensions": FORGE_EXT, "tool_search": "never"},
        steps=[complete()],
        args=["run", "t.yaml"],
    ),
    "forge-unloaded": Scenario(
        task={"model": OPENAI, "extensions": FORGE_EXT},
        steps=[
            # Never loaded: still checked against its schema (a number that is no number).
            tool_reply("delete_label", owner="octo", repo="demo", number="seven"),
            tool_reply("delete_label", owner="octo", repo="demo", number="3"),
            complete(),
        ],
        args=["run", "t.yaml"],
    ),
    "forge-native": Scenario(
        task={"model": OPENAI, "tool_mode": "native", "extensions": FORGE_EXT},
        steps=[
            native(native_call("find_tools", {"query": "create issue"})),
            native(native_call("create_issue", {"owner": "octo", "repo": "demo", "title": "Bug"})),
            native_done(),
        ],
        args=["run", "t.yaml"],
    ),
    "forge-compaction": Scenario(
        task={"model": OPENAI, "extensions": FORGE_EXT},
        steps=[
            tool_reply("find_tools", query="get_issue"),
            tool_reply("get_issue", owner="octo", repo="demo", number="7"),
            fault("context_length"),
            reply("Summary: get_issue was loaded and issue 7 read."),  # the forced summary
            tool_reply("get_issue", owner="octo", repo="demo", number="8"),  # the retry
            complete("issues 7 and 8 read"),
        ],
        args=["run", "t.yaml"],
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    scenarios = {
        name: (
            scenario
            if scenario.args is None or "--out" in scenario.args
            else Scenario(**{**scenario.__dict__, "args": [*scenario.args, "--out", "OUT"]})
        )
        for name, scenario in SCENARIOS.items()
    }
    return run_all(scenarios, module_dir)


def stats(done: Done, *args: str) -> dict[str, Any]:
    """`agent-runner prompt ... --stats --output json` in the run's folder."""
    result = subprocess.run(
        [sys.executable, "-m", "runner", "prompt", *args, "--stats", "--output", "json"],
        cwd=done.root,
        env=clean_env(done.root, {**NO_BYTECODE, "ANTHROPIC_API_KEY": API_KEY}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_every_run_passes_and_writes_logs_that_fit_the_schema(runs: dict[str, Done]) -> None:
    for name, done in runs.items():
        if name == "fix-native":  # nothing was fixed: its check fails, as it should
            assert done.code == 1, done.explain()
        else:
            assert done.code == 0, f"{name}: {done.explain()}"
        for record in done.logs():
            assert log_schema_errors(record.path) == []


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("default-xml", ["t.yaml"]),
        ("default-native-openai", ["t.yaml"]),
        ("default-native-anthropic", ["t.yaml"]),
        ("hello-xml", [str(REPO / "examples/tasks/hello.yaml"), "--model", OPENAI]),
        (
            "fix-native",
            [
                str(REPO / "examples/tasks/fix-failing-test.yaml"),
                *("--model", ANTHROPIC, "--tool-mode", "native"),
            ],
        ),
        ("forge-xml", ["t.yaml"]),
        ("forge-native", ["t.yaml"]),
    ],
)
def test_prompt_stats_sum_to_the_first_request_the_server_received(
    runs: dict[str, Done], name: str, args: list[str]
) -> None:
    done = runs[name]
    found = stats(done, *args)
    sent = content_tokens(done.requests[0].body)
    assert abs(found["total_tokens"] - sent) <= 0.02 * sent, (found["total_tokens"], sent)
    parts = found["parts"]
    assert sum(parts.values()) == found["total_tokens"]
    listed = sum(row["tokens"] for row in found["sections"])
    if found["mode"] == "native":  # the tool list is no section of the prompt
        listed += sum(row["tokens"] for row in found["tools"])
    prompt = parts["system_tokens"] + parts["tools_tokens"]
    assert abs(listed - prompt) <= 0.02 * prompt
    # The log's first model_call carries the same request, measured by the runner itself.
    request = done.events("model_call")[0]["request"]
    assert abs(sum(request.values()) - sent) <= 0.02 * sent


@pytest.mark.parametrize(
    "name", ["default-xml", "default-native-openai", "default-native-anthropic"]
)
def test_the_default_tasks_first_request_is_at_most_1500_tokens(
    runs: dict[str, Done], name: str
) -> None:
    body = runs[name].requests[0].body
    assert body_tokens(body) <= DEFAULT_BUDGET, body_tokens(body)
    if "native" in name:  # the workspace's six tools and attempt_completion, no more
        assert len(tool_names(runs[name].requests[0])) == 7


def test_summary_sums_the_requests_by_part_per_task_and_for_the_run(runs: dict[str, Done]) -> None:
    done = runs["forge-xml"]
    calls = [event["request"] for event in done.events("model_call")]
    assert len(calls) == 3
    task = done.task()["request_tokens"]
    for key in ("system_tokens", "tools_tokens", "messages_tokens"):
        assert task[key] == sum(c[key] for c in calls) > 0
        assert done.summary()["totals"][key] == task[key]
    # The system prompt and the catalogue are resent every turn; the messages grow.
    assert calls[0]["tools_tokens"] == calls[2]["tools_tokens"]
    assert calls[0]["messages_tokens"] < calls[1]["messages_tokens"] < calls[2]["messages_tokens"]


def test_120_tools_are_deferred_and_the_first_request_is_under_a_quarter(
    runs: dict[str, Done],
) -> None:
    deferred = runs["forge-xml"].requests[0]
    full = runs["forge-never"].requests[0]
    assert body_tokens(deferred.body) * 4 < body_tokens(full.body)
    system = system_text(deferred)
    listing = system.split("# DEFERRED TOOLS", 1)[1]
    for name in NAMES:  # each by name and one line, none in full
        assert f"\n{name}: " in listing
        assert f"## {name}\n" not in system
    assert "## find_tools" in system and "## read_file" in system
    assert "- forge: 120 more under DEFERRED TOOLS" in system


def test_tool_search_never_describes_every_tool_in_full(runs: dict[str, Done]) -> None:
    system = system_text(runs["forge-never"].requests[0])
    assert "DEFERRED TOOLS" not in system and "find_tools" not in system
    for name in NAMES:
        assert f"## {name}\nGet" in system or f"## {name}\n" in system
    servers = system.split("# MCP SERVERS", 1)[1].split("# TOOL USE", 1)[0]
    assert "- forge: list_issue, get_issue," in servers


def test_find_tools_loads_a_definition_and_the_tool_then_runs(runs: dict[str, Done]) -> None:
    done = runs["forge-xml"]
    found, got = done.events("tool_call")
    assert found["tool"] == "find_tools" and found["loaded_tools"] == ["get_issue"]
    assert not found["is_error"] and "## get_issue" in found["result"]
    assert "- number (required, integer)" in found["result"]
    assert got["tool"] == "get_issue" and not got["is_error"]
    assert json.loads(got["result"])["arguments"] == {"number": 7, "owner": "octo", "repo": "demo"}
    # The system prompt stays the same from turn to turn: the definition came as a result.
    assert system_text(done.requests[0]) == system_text(done.requests[2])


def test_a_tool_never_loaded_is_still_checked_against_its_schema(runs: dict[str, Done]) -> None:
    done = runs["forge-unloaded"]
    (ran,) = done.events("tool_call")  # the malformed call never reached the server
    assert ran["tool"] == "delete_label" and ran["arguments"]["number"] == 3
    second = json.dumps(done.requests[1].body["messages"][-1])
    assert "number" in second and "integer" in second


def test_native_requests_list_a_deferred_tool_only_once_it_is_loaded(
    runs: dict[str, Done],
) -> None:
    done = runs["forge-native"]
    first, second, third = (tool_names(r) for r in done.requests[:3])
    assert "find_tools" in first and not set(NAMES) & set(first)
    assert len(first) == 8  # the workspace's six, find_tools, attempt_completion
    assert set(NAMES) & set(second) == {"create_issue"} == set(NAMES) & set(third)
    found, created = done.events("tool_call")
    assert found["loaded_tools"] == ["create_issue"]
    assert "Loaded: create_issue" in found["result"]
    assert json.loads(created["result"])["arguments"]["title"] == "Bug"
    assert "# DEFERRED TOOLS" in system_text(done.requests[0])


def test_after_a_compaction_the_loaded_tool_is_named_again_and_still_runs(
    runs: dict[str, Done],
) -> None:
    done = runs["forge-compaction"]
    assert [e["kind"] for e in done.events("compaction")] == ["summary"]
    retried = done.requests[4]
    last = json.dumps(retried.body["messages"][-1])
    assert "the tools you loaded with find_tools stay loaded" in last
    assert "## get_issue" in last
    calls = [e for e in done.events("tool_call") if e["tool"] == "get_issue"]
    assert [json.loads(e["result"])["arguments"]["number"] for e in calls] == [7, 8]
    assert not any(e["is_error"] for e in calls)


FORGE_TASK = {"model": OPENAI, "extensions": FORGE_EXT, "limits": {"max_turns": 1}}


@pytest.fixture(scope="module")
def resumed(module_dir: Path) -> tuple[Done, Done]:
    """A session stopped by its turn limit right after loading get_issue, then resumed."""
    root = module_dir / "resume"
    first = run_one(
        Scenario(
            task=FORGE_TASK,
            steps=[tool_reply("find_tools", query="get_issue"), reply("Loaded it; out of turns.")],
            args=["run", "t.yaml", "--out", "OUT"],
        ),
        root,
    )
    again = run_one(
        Scenario(
            task=FORGE_TASK,
            steps=[
                tool_reply("get_issue", owner="octo", repo="demo", number="9"),
                complete("issue 9 read"),
            ],
            args=["resume", "OUT", "--out", "OUT", "--max-turns", "5"],
        ),
        root,
    )
    return first, again


def test_loaded_tools_survive_a_resume(resumed: tuple[Done, Done]) -> None:
    first, again = resumed
    assert first.code == 5, first.explain()
    assert again.code == 0, again.explain()
    opening = json.dumps(again.requests[0].body["messages"][-1])
    assert "The session resumes; the tools you loaded with find_tools stay loaded" in opening
    assert "## get_issue" in opening
    child = next(r for r in again.logs() if r.header.get("parent_id"))
    assert child.header["loaded_tools"] == ["get_issue"]
    (got,) = [e for e in child.events if e.get("type") == "tool_call"]
    assert got["tool"] == "get_issue" and not got["is_error"]
    assert log_schema_errors(child.path) == []
