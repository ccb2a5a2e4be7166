"""Which protocol era the hub speaks to a stdio server: the handshake era, cheaper per call.

A 2026-07-28 request carries the client's info and capabilities, and the server answers it on a
fresh per-request connection; a stdio server that accepts the `initialize` handshake is spoken to
without that envelope. One that refuses the handshake is still reached, in the 2026 era.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from runner.mcp.connection import Connection
from runner.mcp.extension import ExtensionConfig
from runner.mcp.hub import McpHub
from tests.mcp.conftest import sdk_server
from tests.mcp.servers import sdk_http_server

pytestmark = pytest.mark.anyio

MakeHub = Callable[..., McpHub]

# A server of the 2026 era only, scripted: it refuses `initialize` as the SDK's server refuses it
# on a 2026 connection, and answers in the shapes the SDK's server sends. Each start appends its
# PID to the file named by its first argument.
MODERN_ONLY_SERVER = """
import json, os, sys

with open(sys.argv[1], "a", encoding="utf-8") as starts:
    starts.write(f"{os.getpid()}\\n")
VERSION = "2026-07-28"
CACHEABLE = {"cacheScope": "private", "ttlMs": 0, "resultType": "complete"}
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}
ECHO = {"name": "echo", "inputSchema": TEXT}
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method, params = request["method"], request.get("params") or {}
    meta = params.get("_meta") or {}
    if method == "initialize":
        data = {"supported": [VERSION], "requested": params.get("protocolVersion")}
        reply = {"error": {"code": -32022, "message": f"only {VERSION}", "data": data}}
    elif meta.get("io.modelcontextprotocol/protocolVersion") != VERSION:
        reply = {"error": {"code": -32602, "message": "params._meta lacks the 2026 envelope"}}
    elif method == "server/discover":
        result = {"supportedVersions": [VERSION], "capabilities": {"tools": {}}}
        reply = {"result": {**result, **CACHEABLE}}
    elif method == "tools/list":
        reply = {"result": {"tools": [ECHO], **CACHEABLE}}
    elif method == "tools/call":
        text = params["arguments"]["text"]
        content = [{"type": "text", "text": text}]
        reply = {"result": {"content": content, "isError": False, "resultType": "complete"}}
    else:
        reply = {"error": {"code": -32601, "message": f"no method {method}"}}
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], **reply}), flush=True)
"""


def _protocol(hub: McpHub, server: str) -> str:
    conn = hub._current(server)
    assert isinstance(conn, Connection) and conn.client is not None
    return conn.client.protocol_version


def _starts(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text(encoding="utf-8").split()]


async def test_a_stdio_server_is_spoken_to_in_the_handshake_era(make_hub: MakeHub) -> None:
    async with make_hub({"t": sdk_server()}) as hub:
        result = await hub.call("echo", {"text": "hi"})
        protocol = _protocol(hub, "t")
    assert result.text == "hi" and not result.is_error
    assert protocol not in MODERN_PROTOCOL_VERSIONS


async def test_a_stdio_server_that_refuses_the_handshake_is_reached_in_the_2026_era(
    make_hub: MakeHub, tmp_path: Path
) -> None:
    script, starts = tmp_path / "modern_only.py", tmp_path / "starts.txt"
    script.write_text(MODERN_ONLY_SERVER, encoding="utf-8")
    server = ExtensionConfig(cmd=sys.executable, args=[str(script), str(starts)])
    async with make_hub({"m": server}) as hub:
        result = await hub.call("echo", {"text": "hi"})
        protocol = _protocol(hub, "m")
        refused, serving = _starts(starts)
        assert not Path(f"/proc/{refused}").exists()  # the refused attempt's process is gone
        assert Path(f"/proc/{serving}").exists()
    assert result.text == "hi" and not result.is_error
    assert protocol in MODERN_PROTOCOL_VERSIONS


async def test_a_stdio_server_that_exits_at_start_is_started_once(
    make_hub: MakeHub, tmp_path: Path
) -> None:
    starts = tmp_path / "starts.txt"
    script = sdk_server().args[0]
    wrapper = f'echo $$ >> "{starts}"; exec "{sys.executable}" "{script}" --fail-at-start'
    server = ExtensionConfig(cmd="sh", args=["-c", wrapper], required=False)
    async with make_hub({"f": server}) as hub:
        assert hub.servers == []
    assert len(_starts(starts)) == 1


async def test_an_http_server_is_reached_in_the_2026_era(make_hub: MakeHub) -> None:
    with sdk_http_server() as (url, _process):
        async with make_hub({"h": ExtensionConfig(type="streamable_http", uri=url)}) as hub:
            result = await hub.call("echo", {"text": "hi"})
            protocol = _protocol(hub, "h")
    assert result.text == "hi"
    assert protocol in MODERN_PROTOCOL_VERSIONS
