"""How the runner starts a command, confines it, and ends it (DESIGN sections 5 and 15).

`shell` starts every command a task runs on the machine, execute_command's, the hooks' and the
success check's alike, as the leader of its own process group: the one seam the task's sandbox
confines. `backends` builds the argv that confines a command (`bwrap` for bubblewrap; `landlock`
is the script run by path before a command under Landlock; `seccomp` the filter both load, which
refuses unix sockets, user namespaces and, without network, datagram and raw sockets); `probing`
picks the backend once per run and tries each property the record claims.
`reaper` is the helper process that kills the command groups still running when the runner dies
without cleaning up. `hosts`, `proxy`, `netpath` and `forwarder` are the network allowlist
(DESIGN 19): its rules, the proxy outside the sandbox, and the only path to it from inside.
"""

from __future__ import annotations

from runner.workspace.sandbox.backends import (
    BACKEND_CHOICES,
    SANDBOX_ENV,
    Sandbox,
    confine,
    current,
    git_dirs,
    make_undumpable,
    toolchain_dirs,
)
from runner.workspace.sandbox.bwrap import masked_roots
from runner.workspace.sandbox.hosts import HostRule, match_rule, parse_rule, rule_problems
from runner.workspace.sandbox.landlock import abi_version as landlock_abi
from runner.workspace.sandbox.netpath import NetPath, interpreter_dirs, no_proxy_for, proxied
from runner.workspace.sandbox.probing import PROPERTIES, Probe, probe
from runner.workspace.sandbox.proxy import Connection, NetworkProxy, ProxyLimits
from runner.workspace.sandbox.reaper import Reaper, shared_reaper
from runner.workspace.sandbox.shell import (
    TRACE_ENV,
    ShellRun,
    kill_group,
    open_shell,
    read_pipe,
    run_shell,
    run_to_end,
    start_group,
    start_uncancelled,
)

__all__ = [
    "BACKEND_CHOICES",
    "PROPERTIES",
    "SANDBOX_ENV",
    "TRACE_ENV",
    "Probe",
    "Reaper",
    "Sandbox",
    "ShellRun",
    "confine",
    "current",
    "git_dirs",
    "kill_group",
    "make_undumpable",
    "masked_roots",
    "open_shell",
    "probe",
    "read_pipe",
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
