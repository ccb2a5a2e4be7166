"""The built-in `workspace` MCP server: files and commands, confined to one root (DESIGN section 5).

Started by the hub as `agent-runner mcp workspace --root DIR` (or `python -m runner.workspace
--root DIR`); it speaks MCP over stdio. The tool and parameter descriptions below are shown to the
model in its system prompt, so they say exactly what each tool does and refuses.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from runner.workspace_exec import DEFAULT_TIMEOUT_S, MAX_OUTPUT_CHARS, Commands
from runner.workspace_files import (
    MAX_LIST_ENTRIES,
    MAX_READ_LINES,
    Files,
    parse_blocks,
)
from runner.workspace_paths import Confinement, WorkspaceError

__all__ = ["build_server", "main", "serve"]

_T = TypeVar("_T")

_PATH = "Path of the file, relative to the workspace root."
_REPLACE_DESCRIPTION = """\
Edit a file by exact search and replace. Each edit is a block:

<<<<<<< SEARCH
exact lines currently in the file
=======
the lines to put in their place
>>>>>>> REPLACE

Put several blocks in one `diff` to make several edits; they apply in order. SEARCH must match the \
file exactly once, whitespace and indentation included: include enough surrounding lines to make \
it unique. A SEARCH that matches nothing or more than one place is refused (the error shows the \
closest lines). Instead of `diff` you may give one edit as `search` and `replace`. The edit is \
refused if the file changed since you last read it: read it again first. To create a file or \
rewrite it whole, use write_to_file."""


def build_server(root: Path, output_dir: Path | None = None) -> MCPServer:
    """The workspace server for `root`; command outputs go to `output_dir` (default: a temp dir)."""
    out = output_dir or Path(tempfile.mkdtemp(prefix="agent-runner-workspace-"))
    paths = Confinement(root, readable=(out,))
    files = Files(paths)
    commands = Commands(paths, out)
    app: MCPServer = MCPServer(
        "workspace",
        instructions=f"Files and shell commands in the workspace root {paths.root}.",
    )

    @app.tool(
        description=(
            "Read a text file and return it with line numbers, as `N | line`. Shows at most "
            f"{MAX_READ_LINES} lines per call; use start_line/end_line for a part of a long file. "
            "Binary files are refused. Line numbers are for reference only: never include the "
            "`N | ` prefix in edits."
        )
    )
    def read_file(
        path: Annotated[str, Field(description=_PATH)],
        start_line: Annotated[
            int | None, Field(description="First line to show (1-based); default 1.")
        ] = None,
        end_line: Annotated[
            int | None, Field(description="Last line to show (inclusive); default the end.")
        ] = None,
    ) -> str:
        return _guard(lambda: files.read(path, start_line, end_line))

    @app.tool(
        description=(
            "Write a whole file: create it, or replace all of its content. Missing parent "
            "folders are created. For small changes to an existing file prefer replace_in_file. "
            "Files inside .git/ cannot be written."
        )
    )
    def write_to_file(
        path: Annotated[str, Field(description=_PATH)],
        content: Annotated[str, Field(description="The complete new content of the file.")],
    ) -> str:
        return _guard(lambda: files.write(path, content))

    @app.tool(description=_REPLACE_DESCRIPTION)
    def replace_in_file(
        path: Annotated[str, Field(description=_PATH)],
        diff: Annotated[
            str | None,
            Field(description="One or more SEARCH/REPLACE blocks in the format above."),
        ] = None,
        search: Annotated[
            str | None, Field(description="Instead of diff: the exact text to find.")
        ] = None,
        replace: Annotated[
            str | None, Field(description="Instead of diff: the text to put in its place.")
        ] = None,
    ) -> str:
        return _guard(lambda: files.replace(path, _blocks(diff, search, replace)))

    @app.tool(
        description=(
            "List the files and folders in a folder (folders end with `/`). Entries ignored by "
            "the repository's .gitignore files, and .git itself, are left out. At most "
            f"{MAX_LIST_ENTRIES} entries; a note says when the list was cut."
        )
    )
    def list_files(
        path: Annotated[
            str, Field(description="Folder, relative to the workspace root; default the root.")
        ] = ".",
        recursive: Annotated[
            bool, Field(description="true: also list everything in the subfolders.")
        ] = False,
    ) -> str:
        return _guard(lambda: files.list(path, recursive))

    @app.tool(
        description=(
            "Search file contents with a regular expression (ripgrep/Python syntax). Returns "
            "`path:line:text` for matches and `path-line-text` for one line of context around "
            "each, skipping binary and .gitignore'd files. The number of matches is bounded."
        )
    )
    async def search_files(
        path: Annotated[
            str, Field(description="Folder (or file) to search, relative to the root.")
        ],
        regex: Annotated[str, Field(description="The regular expression to look for.")],
        file_pattern: Annotated[
            str | None, Field(description="Only search files matching this glob, e.g. `*.py`.")
        ] = None,
    ) -> str:
        try:
            return await commands.search(path, regex, file_pattern)
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None

    @app.tool(
        description=(
            "Run a shell command (/bin/sh -c) in the workspace root and return its exit code and "
            f"output (stdout and stderr together). Output over {MAX_OUTPUT_CHARS} characters is "
            "cut in the middle; the full output is saved to a file whose path is given, readable "
            "with read_file. The command has no stdin; it and every process it starts are killed "
            "when it ends or times out. Destructive commands (deleting /, mkfs, fork bombs, "
            "writing to /etc, /usr, /bin, /boot) are refused."
        )
    )
    async def execute_command(
        command: Annotated[str, Field(description="The shell command line to run.")],
        timeout_s: Annotated[
            float | None,
            Field(
                description=f"Seconds before the command is killed; default {DEFAULT_TIMEOUT_S:g}."
            ),
        ] = None,
    ) -> str:
        try:
            return await commands.execute(command, timeout_s)
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None

    return app


def _guard(action: Callable[[], _T]) -> _T:
    try:
        return action()
    except WorkspaceError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None


def _blocks(diff: str | None, search: str | None, replace: str | None) -> list[tuple[str, str]]:
    if diff:
        return parse_blocks(diff)
    if search is not None and replace is not None:
        return [(search, replace)]
    raise WorkspaceError(
        "give either `diff` (SEARCH/REPLACE blocks) or both `search` and `replace`"
    )


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


if __name__ == "__main__":
    raise SystemExit(main())
