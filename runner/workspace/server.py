"""The built-in `workspace` MCP server: files and commands, confined to one root (DESIGN section 5).

`agent-runner mcp workspace --root DIR` (or `python -m runner.workspace --root DIR`) serves the
tools of `runner.workspace.tools` over stdio, for any MCP client. The runner itself calls the same
tools in-process (`runner.mcp.local`) unless the task replaces the workspace's command.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from runner.workspace.paths import WorkspaceError
from runner.workspace.tools import DESCRIPTIONS, READ_ONLY, WorkspaceTools, error_text

__all__ = ["build_server", "main", "serve"]


def build_server(root: Path, output_dir: Path | None = None) -> MCPServer:
    """The workspace server for `root`; command outputs go to `output_dir` (default: a temp dir)."""
    out = output_dir or Path(tempfile.mkdtemp(prefix="agent-runner-workspace-"))
    tools = WorkspaceTools(root, out)
    app: MCPServer = MCPServer(
        "workspace",
        instructions=f"Files and shell commands in the workspace root {tools.paths.root}.",
    )
    for name, description in DESCRIPTIONS.items():
        app.add_tool(
            _refusals_as_tool_errors(getattr(tools, name)),
            description=description,
            annotations=ToolAnnotations(read_only_hint=True) if name in READ_ONLY else None,
        )
    return app


def _refusals_as_tool_errors(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`, with a refusal raised as `ToolError`, whose text the SDK sends to the client.

    The SDK hides the text of any other exception; `functools.wraps` keeps the signature, from
    which the SDK builds the input schema.
    """
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def call_async(**kwargs: Any) -> Any:
            try:
                return await method(**kwargs)
            except (WorkspaceError, OSError) as exc:
                raise ToolError(error_text(exc)) from None

        return call_async

    @functools.wraps(method)
    def call(**kwargs: Any) -> Any:
        try:
            return method(**kwargs)
        except (WorkspaceError, OSError) as exc:
            raise ToolError(error_text(exc)) from None

    return call


def serve(root: Path, output_dir: Path | None = None) -> int:
    """Serve the workspace for `root` over stdio until the client disconnects; the exit code.

    Full command outputs go to `output_dir`, else to a temporary folder removed at exit. The
    runner uses the temporary folder: outputs may hold secrets the runner cannot mask there.
    """
    if not root.is_dir():
        print(f"workspace: root {root} is not a folder", file=sys.stderr)
        return 2
    if output_dir is not None:
        build_server(root, output_dir).run()
        return 0
    with tempfile.TemporaryDirectory(prefix="agent-runner-workspace-") as out:
        build_server(root, Path(out)).run()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m runner.workspace --root DIR`."""
    parser = argparse.ArgumentParser(prog="python -m runner.workspace")
    parser.add_argument("--root", type=Path, required=True, help="the folder tools are confined to")
    parser.add_argument("--output-dir", type=Path, help="where full command outputs are kept")
    args = parser.parse_args(argv)
    return serve(args.root, args.output_dir)
