"""MCP tool-call overhead: the runner's hub against a bare `ClientSession`, same tool, same server.

    python -m benchmarks.mcp_calls --root DIR --calls 200 --rounds 3

Both sides start the workspace server over stdio (`python -m runner.workspace`: a command the hub
does not recognise as its built-in workspace, so it really connects over stdio) and call
`read_file` on the same small file; rounds alternate hub and bare so that machine noise falls on
both. A third side, `local`, is what a task's built-in workspace costs: the hub calling the same
tool in-process. Prints one JSON line with the per-call times of every round, in seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ARGS = {"path": "notes.txt"}


def _server_args(root: Path) -> list[str]:
    return ["-m", "runner.workspace", "--root", str(root)]


async def _bare(root: Path, calls: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=_server_args(root), cwd=root)
    times = []
    with Path(tempfile.gettempdir(), "bench-mcp-bare.stderr.log").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            for _ in range(calls):
                started = time.perf_counter()
                result = await session.call_tool("read_file", ARGS)
                times.append(time.perf_counter() - started)
                assert not result.is_error, result
    return times


async def _hub(root: Path, calls: int) -> list[float]:
    from runner.mcp.extension import ExtensionConfig

    return await _hub_calls(
        root, calls, ExtensionConfig(name="workspace", cmd=sys.executable, args=_server_args(root))
    )


async def _local(root: Path, calls: int) -> list[float]:
    from runner.mcp.hub import workspace_extension

    return await _hub_calls(root, calls, workspace_extension(root))


async def _hub_calls(root: Path, calls: int, extension: Any) -> list[float]:
    from runner.mcp.hub import McpHub
    from runner.settings import environ

    times = []
    with tempfile.TemporaryDirectory() as artifacts:
        hub = McpHub(
            {"workspace": extension},
            workdir=root,
            artifacts_dir=Path(artifacts),
            base_env=environ(),
        )
        async with hub:
            for _ in range(calls):
                started = time.perf_counter()
                result = await hub.call("read_file", dict(ARGS))
                times.append(time.perf_counter() - started)
                assert not result.is_error, result.text
    return times


async def _measure(root: Path, calls: int, rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {"hub": [], "bare": [], "local": []}
    for _ in range(rounds):
        for side, fn in (("hub", _hub), ("bare", _bare), ("local", _local)):
            times = await fn(root, calls)
            # The first calls warm both ends up; the steady state is what a session pays.
            out[side].append(statistics.median(times[min(5, len(times) - 1) :]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = anyio.run(_measure, args.root.resolve(), args.calls, args.rounds)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
