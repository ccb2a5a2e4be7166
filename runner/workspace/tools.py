"""The workspace's six tools as plain methods, with the descriptions the model reads.

One definition serves both ways the tools are reached: `runner.workspace.server` serves them
(`agent-runner mcp workspace`), and `runner.mcp.local` calls them in-process for the runner's own
built-in workspace, without importing the MCP SDK. The parameter annotations are the tools' input
schemas; the descriptions are shown to the model in its system prompt, so they say exactly what
each tool does and refuses. A refused call raises `WorkspaceError` (or `OSError`), whose text the
model gets back through `error_text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import Field

from runner.settings import WorkspaceLimits
from runner.workspace.commands import DEFAULT_TIMEOUT_S, Commands, GroupWatcher
from runner.workspace.files import Files, parse_blocks
from runner.workspace.paths import Confinement, WorkspaceError

__all__ = ["DESCRIPTIONS", "READ_ONLY", "WorkspaceTools", "error_text"]

_PATH = "File path, relative to the root."
_REPLACE_DESCRIPTION = (
    "Edit a file by exact search and replace: `diff` holds one or more SEARCH/REPLACE blocks. "
    "Each SEARCH must match the file exactly once, whitespace included; blocks apply in order. "
    "Or give one edit as `search` and `replace`."
)

DESCRIPTIONS: dict[str, str] = {
    "read_file": ("Read a text file with line numbers (`N | line`; never put them in edits)."),
    "write_to_file": (
        "Create a file or replace all its content (missing folders are created). For small "
        "edits prefer replace_in_file."
    ),
    "replace_in_file": _REPLACE_DESCRIPTION,
    "list_files": ("List a folder (folders end with `/`), without what .gitignore ignores."),
    "search_files": (
        "Search file contents with a regular expression; gives `path:line:text` matches."
    ),
    "execute_command": (
        "Run a shell command (/bin/sh -c, no stdin) in the workspace root; gives its exit code "
        "and output. Processes it starts end with it."
    ),
}
"""Every tool, in the order it is listed, with its description; the keys are method names."""


READ_ONLY = frozenset({"read_file", "list_files", "search_files"})
"""The tools that change nothing: published with `readOnlyHint`, so that several of their calls
in one reply run at the same time (DESIGN section 16)."""


class WorkspaceTools:
    """The tools, confined to `root`; full command outputs are kept in `output_dir`.

    `env` is the whole environment of the commands `execute_command` runs (None: this process's
    own, which is what the stdio server wants, since the hub already gave it a minimal one).
    `watcher` is told about every command's process group while it runs, so that a reaper can
    kill it if this process dies first. `limits` are the size limits (defaults: the settings').
    """

    def __init__(
        self,
        root: Path,
        output_dir: Path,
        *,
        env: Mapping[str, str] | None = None,
        watcher: GroupWatcher | None = None,
        limits: WorkspaceLimits | None = None,
    ) -> None:
        limits = limits or WorkspaceLimits()
        self.paths = Confinement(root, readable=(output_dir,))
        self._files = Files(self.paths, max_read_bytes=limits.read_max_bytes)
        self._commands = Commands(self.paths, output_dir, env=env, watcher=watcher, limits=limits)

    def read_file(
        self,
        path: Annotated[str, Field(description=_PATH)],
        start_line: Annotated[int | None, Field(description="First line, from 1.")] = None,
        end_line: Annotated[int | None, Field(description="Last line, inclusive.")] = None,
    ) -> str:
        return self._files.read(path, start_line, end_line)

    def write_to_file(
        self,
        path: Annotated[str, Field(description=_PATH)],
        content: Annotated[str, Field(description="The whole new content.")],
    ) -> str:
        return self._files.write(path, content)

    def replace_in_file(
        self,
        path: Annotated[str, Field(description=_PATH)],
        diff: Annotated[
            str | None,
            Field(
                description="Blocks of `<<<<<<< SEARCH`, the exact lines, `=======`, the new "
                "lines, `>>>>>>> REPLACE`, each marker on its own line.",
                examples=[
                    "<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE"
                ],
            ),
        ] = None,
        search: Annotated[
            str | None, Field(description="Instead of diff: the exact text to find.")
        ] = None,
        replace: Annotated[
            str | None, Field(description="Instead of diff: its replacement.")
        ] = None,
    ) -> str:
        return self._files.replace(path, _blocks(diff, search, replace))

    def list_files(
        self,
        path: Annotated[str, Field(description="Folder, relative to the root.")] = ".",
        recursive: Annotated[bool, Field(description="true: list the subfolders too.")] = False,
    ) -> str:
        return self._files.list(path, recursive)

    async def search_files(
        self,
        path: Annotated[str, Field(description="Folder or file, relative to the root.")],
        regex: Annotated[str, Field(description="The regular expression to look for.")],
        file_pattern: Annotated[
            str | None, Field(description="Only files matching this glob, e.g. `*.py`.")
        ] = None,
    ) -> str:
        return await self._commands.search(path, regex, file_pattern)

    async def execute_command(
        self,
        command: Annotated[str, Field(description="The shell command line.")],
        timeout_s: Annotated[
            float | None,
            Field(description=f"Seconds before it is killed; default {DEFAULT_TIMEOUT_S:g}."),
        ] = None,
    ) -> str:
        return await self._commands.execute(command, timeout_s)


def error_text(exc: WorkspaceError | OSError) -> str:
    """What the model reads for a refused call."""
    if isinstance(exc, WorkspaceError):
        return str(exc)
    return f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")


def _blocks(diff: str | None, search: str | None, replace: str | None) -> list[tuple[str, str]]:
    if diff:
        return parse_blocks(diff)
    if search is not None and replace is not None:
        return [(search, replace)]
    raise WorkspaceError(
        "give either `diff` (SEARCH/REPLACE blocks) or both `search` and `replace`"
    )
