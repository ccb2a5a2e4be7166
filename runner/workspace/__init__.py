"""The built-in workspace (DESIGN section 5): file and command tools confined to one root.

`WorkspaceTools` holds the tools as plain methods over a `Confinement` (paths), `files`
(read, write, replace, list, search) and `commands` (execute_command, with the `reaper` that
kills a command's process group however the runner dies). `shell` starts every command a task
runs on the machine, execute_command's, the hooks' and the success check's alike: the one seam
the task's `sandbox` (bubblewrap or Landlock, `landlock` the script it runs) confines.
The hub calls the tools in-process; `runner.workspace.server` serves them over stdio for any
MCP client (`agent-runner mcp workspace`, `python -m runner.workspace`). `tree` is the bounded,
.gitignore-aware folder walk that the prompt's file list shares; `confined_read` reads a workdir
file for the prompt (regular files inside the workdir only, bounded); `regular` reads and writes
regular files only, opened by `beneath` under their root without a check-then-open gap. Importing
this face imports no MCP SDK.
"""

from __future__ import annotations

from runner.workspace.confined_read import DEFAULT_PROMPT_FILE_BYTES, Bounded, read_confined
from runner.workspace.paths import Confinement, WorkspaceError
from runner.workspace.reaper import Reaper, shared_reaper
from runner.workspace.regular import read_regular
from runner.workspace.sandbox import (
    BACKEND_CHOICES,
    SANDBOX_ENV,
    Probe,
    Sandbox,
    confine,
    current,
    git_dirs,
    make_undumpable,
    probe,
    toolchain_dirs,
)
from runner.workspace.shell import (
    TRACE_ENV,
    ShellRun,
    kill_group,
    open_shell,
    read_pipe,
    run_shell,
    run_to_end,
)
from runner.workspace.tools import DESCRIPTIONS, READ_ONLY, WorkspaceTools, error_text
from runner.workspace.tree import Listing, list_tree

__all__ = [
    "BACKEND_CHOICES",
    "SANDBOX_ENV",
    "Probe",
    "Sandbox",
    "confine",
    "current",
    "git_dirs",
    "kill_group",
    "make_undumpable",
    "open_shell",
    "read_pipe",
    "probe",
    "DEFAULT_PROMPT_FILE_BYTES",
    "TRACE_ENV",
    "Bounded",
    "DESCRIPTIONS",
    "READ_ONLY",
    "Confinement",
    "Listing",
    "Reaper",
    "ShellRun",
    "WorkspaceError",
    "WorkspaceTools",
    "error_text",
    "list_tree",
    "read_confined",
    "read_regular",
    "run_shell",
    "run_to_end",
    "shared_reaper",
    "toolchain_dirs",
]
