"""The hub against third-party servers: mcp-server-time (PyPI) and server-everything (npm) over
stdio, streamable HTTP and SSE."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from runner.mcp.extension import ExtensionConfig
from runner.mcp.hub import McpHub
from runner.toolcall.spec import ToolSpec
from tests.mcp.servers import everything_http_server, require_everything

pytestmark = pytest.mark.anyio

MakeHub = Callable[..., McpHub]


def time_server() -> ExtensionConfig:
    return ExtensionConfig(cmd=sys.executable, args=["-m", "mcp_server_time"])


async def test_mcp_server_time_over_stdio(make_hub: MakeHub) -> None:
    async with make_hub({"time": time_server()}) as hub:
        names = {spec.name for spec in hub.tools}
        now = await hub.call("get_current_time", {"timezone": "UTC"})
        bad = await hub.call("get_current_time", {"timezone": "Not/AZone"})
        again = await hub.call("get_current_time", {"timezone": "Europe/Paris"})
    assert {"get_current_time", "convert_time"} <= names
    assert not now.is_error and "UTC" in now.text
    assert bad.is_error
    assert not again.is_error and "Europe/Paris" in again.text


async def test_unknown_tool_on_a_python_lowlevel_server_is_an_error_result(
    make_hub: MakeHub,
) -> None:
    async with make_hub({"time": time_server()}) as hub:
        # Forward a name the server never listed, as after a tool list changed under the hub.
        conn = hub._current("time")
        result = await hub._call(conn, ToolSpec("vanished", "", server="time"), {})
        after = await hub.call("get_current_time", {"timezone": "UTC"})
    assert result.is_error and "vanished" in result.text
    assert not after.is_error


@pytest.fixture
def everything_stdio() -> ExtensionConfig:
    return ExtensionConfig(cmd="node", args=[str(require_everything()), "stdio"])


async def test_server_everything_over_stdio(
    make_hub: MakeHub, everything_stdio: ExtensionConfig
) -> None:
    async with make_hub({"everything": everything_stdio}) as hub:
        names = {spec.name for spec in hub.tools}
        echo = await hub.call("echo", {"message": "hello"})
        total = await hub.call("get-sum", {"a": 2, "b": 3})
        image = await hub.call("get-tiny-image", {})
        missing = await hub.call("echo", {})
        after = await hub.call("echo", {"message": "still"})
    assert {"echo", "get-sum"} <= names
    assert "hello" in echo.text and not echo.is_error
    assert "5" in total.text
    assert "[image: image/png" in image.text
    assert missing.is_error
    assert "still" in after.text


async def test_unknown_tool_on_a_typescript_server_is_an_error_result(
    make_hub: MakeHub, everything_stdio: ExtensionConfig
) -> None:
    async with make_hub({"everything": everything_stdio}) as hub:
        conn = hub._current("everything")
        spec = ToolSpec("vanished", "", server="everything")
        result = await hub._call(conn, spec, {})
        after = await hub.call("echo", {"message": "ok"})
    assert result.is_error and "vanished" in result.text
    assert "ok" in after.text


async def test_server_everything_over_streamable_http(make_hub: MakeHub) -> None:
    with everything_http_server() as (url, _):
        http = ExtensionConfig(type="streamable_http", uri=url)
        async with make_hub({"everything": http}) as hub:
            echo = await hub.call("echo", {"message": "over http"})
            total = await hub.call("get-sum", {"a": 1, "b": 1})
    assert "over http" in echo.text and "2" in total.text


async def test_server_everything_over_sse(make_hub: MakeHub) -> None:
    """The older HTTP+SSE transport: GET /sse streams replies, POST /message?sessionId= sends."""
    with everything_http_server("sse", "/sse") as (url, _):
        sse = ExtensionConfig(type="sse", uri=url)
        async with make_hub({"everything": sse}) as hub:
            names = {spec.name for spec in hub.tools}
            echo = await hub.call("echo", {"message": "over sse"})
            total = await hub.call("get-sum", {"a": 2, "b": 2})
            missing = await hub.call("echo", {})
            after = await hub.call("echo", {"message": "still there"})
    assert {"echo", "get-sum"} <= names
    assert "over sse" in echo.text and not echo.is_error
    assert "4" in total.text
    assert missing.is_error
    assert "still there" in after.text
