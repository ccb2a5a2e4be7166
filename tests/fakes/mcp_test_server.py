"""A test MCP server written with the SDK, for the hub tests.

Run it over stdio:

    python tests/fakes/mcp_test_server.py [--name NAME] [--hang-at-initialize] [--fail-at-start]

or over streamable HTTP on 127.0.0.1 and a free port, announced as the first stdout line `PORT <n>`
(the endpoint is `http://127.0.0.1:<n>/mcp`):

    python tests/fakes/mcp_test_server.py --http

`stdio_params()` and `start_http()` build these command lines for tests.
"""

from __future__ import annotations

import argparse
import enum
import os
import socket
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

__all__ = ["SCRIPT", "build_server", "main"]

SCRIPT = Path(__file__).resolve()
INVALID_PARAMS = -32602


class Colour(enum.StrEnum):
    """An enum parameter."""

    RED = "red"
    GREEN = "green"


class Point(BaseModel):
    """An object parameter."""

    x: int
    y: int


def build_server(name: str) -> MCPServer:
    """The server with all its tools; `name` prefixes nothing, it only names the server."""
    app: MCPServer = MCPServer(name)
    meetings: dict[str, tuple[list[int], anyio.Event]] = {}

    @app.tool()
    def echo(text: Annotated[str, Field(description="Text to send back.")]) -> str:
        """Return the text unchanged."""
        return text

    @app.tool()
    def types_tool(
        count: Annotated[int, Field(description="An integer.")],
        ratio: Annotated[float, Field(description="A number.")],
        flag: Annotated[bool, Field(description="A boolean.")],
        items: Annotated[list[str], Field(description="An array of strings.")],
        point: Annotated[Point, Field(description="An object with x and y.")],
        colour: Annotated[Colour, Field(description="An enum.")],
        mode: Annotated[Literal["fast", "slow"], Field(description="A literal enum.")] = "fast",
        note: Annotated[str | None, Field(description="A nullable string.")] = None,
        value: Annotated[int | str, Field(description="An integer or a string (anyOf).")] = 0,
    ) -> str:
        """Echo every argument back as `name=repr` lines, with its Python type."""
        args: dict[str, Any] = {
            "count": count,
            "ratio": ratio,
            "flag": flag,
            "items": items,
            "point": point.model_dump(),
            "colour": colour.value,
            "mode": mode,
            "note": note,
            "value": value,
        }
        return "\n".join(f"{key}={val!r}:{type(val).__name__}" for key, val in args.items())

    @app.tool()
    async def slow(seconds: Annotated[float, Field(description="Seconds to sleep.")]) -> str:
        """Sleep, then answer."""
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @app.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def meet(
        group: Annotated[str, Field(description="Callers of one group wait for each other.")],
        label: Annotated[str, Field(description="Sent back first in the answer.")],
        callers: Annotated[int, Field(description="How many callers the group waits for.")],
        wait_s: Annotated[float, Field(description="Longest wait for the others.")] = 10.0,
    ) -> str:
        """A read-only rendezvous: wait (at most `wait_s`) until `callers` calls of `group` have
        arrived. `met` means every caller of the group was inside at once: a call that had to
        wait alone answers `alone`, so calls made one after another never meet."""
        arrived, everyone = meetings.setdefault(group, ([0], anyio.Event()))
        arrived[0] += 1
        if arrived[0] >= callers:
            everyone.set()
        with anyio.move_on_after(wait_s):
            await everyone.wait()
        return f"{label}: {'met' if everyone.is_set() else 'alone'} ({arrived[0]} of {callers})"

    @app.tool()
    def fail(message: Annotated[str, Field(description="The error text.")] = "it failed") -> str:
        """Return an error result (is_error) with the given text."""
        raise ToolError(message)

    @app.tool()
    def crash() -> str:
        """Kill this server process at once, without answering."""
        os._exit(17)

    @app.tool()
    def reject_unknown() -> str:
        """Answer like a Python SDK server that does not know the tool: JSON-RPC -32602."""
        raise MCPError(INVALID_PARAMS, "Unknown tool: reject_unknown")

    @app.tool()
    async def progress(
        steps: Annotated[int, Field(description="How many progress notifications to send.")],
        ctx: Context,
    ) -> str:
        """Send `steps` progress notifications, then answer."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"{steps} steps"

    @app.tool()
    def environment() -> dict[str, str]:
        """Return this process's environment variables."""
        return dict(os.environ)

    @app.tool()
    def pid() -> int:
        """Return this process's id."""
        return os.getpid()

    return app


def _hang() -> None:
    # Never answer initialize; exit once the client closes stdin so shutdown is quick.
    sys.stdin.buffer.read()


async def _serve_http(app: MCPServer) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(app.streamable_http_app(), log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


def main(argv: list[str] | None = None) -> int:
    """Parse the options and serve."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="test")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--hang-at-initialize", action="store_true")
    parser.add_argument("--fail-at-start", action="store_true")
    parser.add_argument(
        "--dotted-tool", action="store_true", help="also offer `notes.echo` (a name with a dot)"
    )
    opts = parser.parse_args(argv)
    if opts.fail_at_start:
        print("test server: failing at start as asked", file=sys.stderr, flush=True)
        return 3
    if opts.hang_at_initialize:
        _hang()
        return 0
    app = build_server(opts.name)
    if opts.dotted_tool:

        @app.tool(name="notes.echo")
        def notes_echo(text: Annotated[str, Field(description="Text to send back.")]) -> str:
            """Return the text unchanged (a tool whose name OpenAI refuses)."""
            return text

    if opts.http:
        anyio.run(_serve_http, app)
    else:
        app.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
