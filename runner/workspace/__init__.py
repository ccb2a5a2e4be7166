"""The built-in workspace (DESIGN section 5): file and command tools confined to one root.

`WorkspaceTools` holds the tools as plain methods over a `Confinement` (paths), `files`
(read, write, replace, list), `search` (search_files, run in a child process: `search_worker`)
and `commands` (execute_command, its output captured by `output`). The hub calls the tools
in-process; `runner.workspace.server` serves them over stdio for any MCP client (`agent-runner mcp
workspace`, `python -m runner.workspace`). Two rooms hold what the tools stand on: `sandbox`
(how every command a task runs is started, confined by bubblewrap or Landlock, and reaped however
the runner dies) and `fs` (opening, reading and walking the workdir's files without trusting
them). Importing this face imports no MCP SDK.
"""

from __future__ import annotations

from runner.workspace.fs import (
    DEFAULT_PROMPT_FILE_BYTES,
    Bounded,
    Listing,
    list_tree,
    read_confined,
    read_regular,
)
from runner.workspace.paths import Confinement, WorkspaceError
from runner.workspace.sandbox import (
    BACKEND_CHOICES,
    PROPERTIES,
    SANDBOX_ENV,
    TRACE_ENV,
    Connection,
    HostRule,
    NetPath,
    NetworkProxy,
    Probe,
    ProxyLimits,
    Reaper,
    Sandbox,
    ShellRun,
    confine,
    current,
    git_dirs,
    interpreter_dirs,
    kill_group,
    landlock_abi,
    make_undumpable,
    masked_roots,
    match_rule,
    no_proxy_for,
    open_shell,
    parse_rule,
    probe,
    proxied,
    read_pipe,
    rule_problems,
    run_shell,
    run_to_end,
    shared_reaper,
    start_group,
    start_uncancelled,
    toolchain_dirs,
)
from runner.workspace.tools import DESCRIPTIONS, READ_ONLY, WorkspaceTools, error_text

__all__ = [
    "BACKEND_CHOICES",
    "PROPERTIES",
    "SANDBOX_ENV",
    "Probe",
    "Sandbox",
    "confine",
    "current",
    "git_dirs",
    "kill_group",
    "make_undumpable",
    "masked_roots",
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
    "start_group",
    "start_uncancelled",
    "toolchain_dirs",
    "Connection",
    "HostRule",
    "NetPath",
    "NetworkProxy",
    "ProxyLimits",
    "interpreter_dirs",
    "landlock_abi",
    "match_rule",
    "no_proxy_for",
    "parse_rule",
    "proxied",
    "rule_problems",
]
