"""The hub over real stdio and HTTP against the SDK test server: calls and every failure."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from runner.errors import ExitCode, McpServerError
from runner.mcp.extension import ExtensionConfig, ToolPolicy
from runner.mcp.hub import HubEvent, McpHub
from tests.mcp.conftest import sdk_server
from tests.mcp.servers import sdk_http_server

pytestmark = pytest.mark.anyio

MakeHub = Callable[..., McpHub]
TYPES_ARGS = {
    "count": 3,
    "ratio": 0.5,
    "flag": True,
    "items": ["a", "b"],
    "point": {"x": 1, "y": 2},
    "colour": "green",
    "mode": "slow",
    "note": None,
    "value": "seven",
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


async def _wait_gone(pid: int) -> None:
    with anyio.fail_after(10):
        while _alive(pid):
            await anyio.sleep(0.02)


async def test_a_tool_is_read_only_when_its_annotations_say_so(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        read_only = {spec.name for spec in hub.tools if spec.read_only}
    assert read_only == {"meet"}


async def test_tools_are_listed_with_their_schemas(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        specs = {spec.name: spec for spec in hub.tools}
    schema = specs["types_tool"].input_schema
    assert specs["types_tool"].server == "t"
    assert specs["types_tool"].remote_name == ""
    props = schema["properties"]
    assert props["count"]["type"] == "integer"
    assert props["ratio"]["type"] == "number"
    assert props["flag"]["type"] == "boolean"
    assert props["items"]["type"] == "array"
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert {"type": "null"} in props["note"]["anyOf"]
    assert len(props["value"]["anyOf"]) == 2
    assert "$ref" in props["point"] and "$ref" in props["colour"]


async def test_call_passes_every_json_type_through(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        result = await hub.call("types_tool", TYPES_ARGS)
    assert not result.is_error
    assert result.text.splitlines() == [
        "count=3:int",
        "ratio=0.5:float",
        "flag=True:bool",
        "items=['a', 'b']:list",
        "point={'x': 1, 'y': 2}:dict",
        "colour='green':str",
        "mode='slow':str",
        "note=None:NoneType",
        "value='seven':str",
    ]


async def test_error_result_comes_back_and_the_hub_keeps_working(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        failed = await hub.call("fail", {"message": "disk full"})
        after = await hub.call("echo", {"text": "still here"})
    assert failed.is_error and "disk full" in failed.text
    assert after.text == "still here" and not after.is_error


async def test_unknown_tool_name_is_an_error_listing_the_tools(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        result = await hub.call("nope", {})
        after = await hub.call("echo", {"text": "ok"})
    assert result.is_error
    assert "no tool named 'nope'" in result.text and "echo" in result.text
    assert after.text == "ok"


async def test_unknown_tool_as_jsonrpc_error_becomes_an_error_result(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        result = await hub.call("reject_unknown", {})
        after = await hub.call("echo", {"text": "ok"})
    assert result.is_error
    assert "Unknown tool: reject_unknown" in result.text and "-32602" in result.text
    assert after.text == "ok"


async def test_a_call_past_its_timeout_is_an_error_and_the_server_stays_usable(
    make_hub: MakeHub,
) -> None:
    async with make_hub({"t": sdk_server(timeout=0.5)}) as hub:
        with anyio.fail_after(10):
            result = await hub.call("slow", {"seconds": 30})
        after = await hub.call("echo", {"text": "ok"})
    assert result.is_error and "timed out after 0.5 s" in result.text
    assert after.text == "ok"


async def test_default_tool_timeout_applies_without_an_extension_timeout(
    make_hub: MakeHub,
) -> None:
    async with make_hub({"t": sdk_server()}, default_tool_timeout_s=0.5) as hub:
        with anyio.fail_after(10):
            result = await hub.call("slow", {"seconds": 30})
    assert result.is_error and "timed out after 0.5 s" in result.text


async def test_a_crashed_server_is_restarted_for_the_next_call(
    make_hub: MakeHub, events: list[HubEvent]
) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        first_pid = int((await hub.call("pid", {})).text)
        crashed = await hub.call("crash", {})
        second_pid = int((await hub.call("pid", {})).text)
        after = await hub.call("echo", {"text": "ok"})
    assert crashed.is_error
    assert "closed the connection during 'crash'" in crashed.text
    assert "t.stderr.log" in crashed.text and "restarted for the next call" in crashed.text
    assert second_pid != first_pid and after.text == "ok"
    restarts = [event for event in events if event.kind == "restart"]
    assert [event.server for event in restarts] == ["t"]
    assert "1 of 3" in restarts[0].message


async def test_restarts_are_bounded(make_hub: MakeHub, events: list[HubEvent]) -> None:
    async with make_hub({"t": sdk_server()}, max_restarts=1) as hub:
        await hub.call("crash", {})
        second = await hub.call("crash", {})
        third = await hub.call("echo", {"text": "x"})
    assert second.is_error and "used up its restarts" in second.text
    assert third.is_error and "already restarted 1 times" in third.text
    assert len([event for event in events if event.kind == "restart"]) == 1


async def test_a_denied_call_never_reaches_the_server(make_hub: MakeHub) -> None:
    policy = ToolPolicy(allow=["*"], deny=["crash", "sl*"])
    async with make_hub({"t": sdk_server()}, policy=policy) as hub:
        denied = await hub.call("crash", {})
        glob_denied = await hub.call("slow", {"seconds": 0})
        pid_result = await hub.call("pid", {})
        allowed = {spec.name for spec in hub.allowed_tools}
    assert denied.is_error and "not allowed by the task's tool policy" in denied.text
    assert "tools.deny=['crash', 'sl*']" in denied.text
    assert glob_denied.is_error
    assert not pid_result.is_error  # the server did not crash: the call never left the runner
    assert "crash" not in allowed and "echo" in allowed


async def test_allow_list_limits_the_tools(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}, policy=ToolPolicy(allow=["echo"])) as hub:
        assert (await hub.call("echo", {"text": "a"})).text == "a"
        assert (await hub.call("pid", {})).is_error


async def test_an_optional_server_that_fails_to_start_is_skipped_with_a_warning(
    make_hub: MakeHub, events: list[HubEvent]
) -> None:
    extensions = {"ok": sdk_server(), "bad": sdk_server("--fail-at-start", required=False)}
    async with make_hub(extensions) as hub:
        assert hub.servers == ["ok"]
        assert (await hub.call("echo", {"text": "fine"})).text == "fine"
    warnings = [event for event in events if event.kind == "warning"]
    assert [event.server for event in warnings] == ["bad"]
    assert "failed to start" in warnings[0].message and "bad.stderr.log" in warnings[0].message


async def test_a_required_server_that_fails_to_start_is_an_infrastructure_error(
    make_hub: MakeHub, tmp_path: Path
) -> None:
    with pytest.raises(McpServerError) as info:
        async with make_hub({"ok": sdk_server(), "bad": sdk_server("--fail-at-start")}):
            pytest.fail("the hub should not start")
    message = str(info.value)
    log = tmp_path / "artifacts" / "mcp" / "bad.stderr.log"
    assert "'bad' failed to start" in message and str(log) in message
    assert info.value.exit_code == ExitCode.INFRASTRUCTURE
    assert "failing at start as asked" in log.read_text(encoding="utf-8")


async def test_a_missing_command_is_reported_by_name(make_hub: MakeHub) -> None:
    with pytest.raises(McpServerError, match="'gone' failed to start: command not found"):
        async with make_hub({"gone": ExtensionConfig(cmd="/nonexistent/mcp-server")}):
            pass


async def test_a_server_hanging_at_initialize_hits_the_startup_timeout(
    make_hub: MakeHub, events: list[HubEvent]
) -> None:
    with anyio.fail_after(15), pytest.raises(McpServerError, match="within 1 s"):
        async with make_hub({"hang": sdk_server("--hang-at-initialize")}, startup_timeout_s=1):
            pass
    extensions = {"ok": sdk_server(), "hang": sdk_server("--hang-at-initialize", required=False)}
    with anyio.fail_after(40):
        # The limit must outlast the "ok" server's start (importing the MCP SDK took 3.8 s at a
        # load average of 30, which failed a 4 s limit); the hanging one costs the test this wait.
        async with make_hub(extensions, startup_timeout_s=12) as hub:
            assert hub.servers == ["ok"]
            assert (await hub.call("echo", {"text": "ok"})).text == "ok"
    assert any(event.kind == "warning" and event.server == "hang" for event in events)


async def test_clashing_names_are_exposed_as_server_tool(make_hub: MakeHub) -> None:
    async with make_hub({"a": sdk_server(), "b": sdk_server()}) as hub:
        names = {spec.name for spec in hub.tools}
        result = await hub.call("b__echo", {"text": "from b"})
        spec = next(spec for spec in hub.tools if spec.name == "a__echo")
    assert {"a__echo", "b__echo"} <= names and "echo" not in names
    assert result.text == "from b"
    assert (spec.server, spec.remote_name, spec.call_name) == ("a", "echo", "echo")


async def test_a_stdio_server_never_sees_the_runner_api_keys(make_hub: MakeHub) -> None:
    base_env = {
        "PATH": os.environ["PATH"],
        "HOME": "/home/runner-test",
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": "sk-openai-secret",
        "ANTHROPIC_API_KEY": "sk-ant-secret",
        "GITHUB_TOKEN": "ghp-secret",
        "UNRELATED": "not passed",
    }
    server = sdk_server(envs={"GITLAB_TOKEN": "given-on-purpose"})
    async with make_hub({"t": server}, base_env=base_env) as hub:
        env = json.loads((await hub.call("environment", {})).text)
    assert "OPENAI_API_KEY" not in env and "ANTHROPIC_API_KEY" not in env
    assert "GITHUB_TOKEN" not in env and "UNRELATED" not in env
    assert not any("secret" in value for value in env.values())
    assert env["HOME"] == "/home/runner-test" and env["LANG"] == "C.UTF-8"
    assert env["GITLAB_TOKEN"] == "given-on-purpose"


async def test_progress_notifications_are_reported(
    make_hub: MakeHub, events: list[HubEvent]
) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        result = await hub.call("progress", {"steps": 3})
    progress = [event for event in events if event.kind == "progress"]
    assert result.text == "3 steps"
    assert [(event.progress, event.total, event.tool) for event in progress] == [
        (1, 3, "progress"),
        (2, 3, "progress"),
        (3, 3, "progress"),
    ]
    assert "step 3 of 3" in progress[-1].message


async def test_server_stderr_goes_to_a_file_in_the_artifacts(
    make_hub: MakeHub, events: list[HubEvent], tmp_path: Path
) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        await hub.call("fail", {})
    log = tmp_path / "artifacts" / "mcp" / "t.stderr.log"
    assert [event.path for event in events if event.kind == "stderr"] == [log]
    assert log.is_file()


async def test_every_server_process_stops_on_exit(make_hub: MakeHub) -> None:
    async with make_hub({"a": sdk_server(), "b": sdk_server()}) as hub:
        pids = [int((await hub.call(f"{name}__pid", {})).text) for name in ("a", "b")]
    for pid in pids:
        await _wait_gone(pid)


async def test_every_server_process_stops_when_the_caller_is_cancelled(make_hub: MakeHub) -> None:
    pids: list[int] = []
    with anyio.CancelScope() as scope:
        async with make_hub({"t": sdk_server()}) as hub:
            pids.append(int((await hub.call("pid", {})).text))
            # The cancel comes during the slow call, however long the server took to start.
            scope.deadline = anyio.current_time() + 0.5
            await hub.call("slow", {"seconds": 60})
    assert scope.cancelled_caught
    await _wait_gone(pids[0])


async def test_streamable_http_server_calls_work(make_hub: MakeHub) -> None:
    with sdk_http_server() as (url, _):
        http = ExtensionConfig(type="streamable_http", uri=url)
        async with make_hub({"h": http}) as hub:
            assert (await hub.call("echo", {"text": "over http"})).text == "over http"
            failed = await hub.call("fail", {"message": "http failure"})
    assert failed.is_error and "http failure" in failed.text


async def test_a_dead_http_server_gives_an_error_and_the_hub_keeps_working(
    make_hub: MakeHub,
) -> None:
    with sdk_http_server() as (url, process):
        http = ExtensionConfig(type="streamable_http", uri=url, timeout=5)
        async with make_hub({"h": http, "local": sdk_server()}) as hub:
            assert (await hub.call("h__echo", {"text": "up"})).text == "up"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
            with anyio.fail_after(20):
                dead = await hub.call("h__echo", {"text": "down"})
                again = await hub.call("h__echo", {"text": "down"})
            local = await hub.call("local__echo", {"text": "alive"})
    assert dead.is_error and "'h'" in dead.text
    assert again.is_error
    assert local.text == "alive"
