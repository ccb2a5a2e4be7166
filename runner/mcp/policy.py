"""Globs of `tools.allow`/`tools.deny` that match no tool (DESIGN 7b: a configuration error).

A typo in a deny list (`exec_command`) would otherwise deny nothing and let the agent run
commands. A pattern is checked against every name a tool answers to (`policy_allows`): its
exposed name, its name on the server and `server__tool`, plus `attempt_completion`.

The built-in workspace's tools are known without starting anything, so `validate` checks a task
whose only server is the workspace; a task with other MCP servers is checked by `run` (and
`prompt`) once they have listed their tools, because `validate` starts no server (it runs where
their secrets and network may be missing).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from runner.mcp.extension import WORKSPACE, ToolPolicy
from runner.workspace import DESCRIPTIONS

__all__ = ["BUILTIN_TOOL_NAMES", "Unmatched", "tool_names", "unmatched_patterns"]

COMPLETION = "attempt_completion"
RUNNER_TOOLS = frozenset({COMPLETION, "sub_agent"})
"""The runner's own tools (runner.run.agents.tool names sub_agent), which no server lists."""
BUILTIN_TOOL_NAMES: frozenset[str] = frozenset(
    {*DESCRIPTIONS, *(f"{WORKSPACE}__{name}" for name in DESCRIPTIONS), *RUNNER_TOOLS}
)
"""Every name the built-in workspace's tools and the runner's own tools answer to."""


@dataclass(frozen=True)
class Unmatched:
    """One pattern of the policy that matches no tool."""

    field: Literal["allow", "deny"]
    index: int
    pattern: str
    suggestion: str | None
    """The closest tool name, for a "did you mean"."""

    @property
    def message(self) -> str:
        verb = "allows" if self.field == "allow" else "denies"
        return f"{self.pattern!r} matches no tool, so it {verb} nothing"

    @property
    def hint(self) -> str:
        if self.suggestion:
            return f"did you mean {self.suggestion!r}?"
        return "check the spelling against the tool list (`agent-runner prompt TASK`)"


def tool_names(specs: Iterable[tuple[str, str, str]]) -> set[str]:
    """Every name tools answer to, from (exposed name, name on the server, server) triples."""
    names = set(RUNNER_TOOLS)
    for name, call_name, server in specs:
        names.update((name, call_name, f"{server}__{call_name}"))
    return names


def unmatched_patterns(policy: ToolPolicy, names: Iterable[str]) -> list[Unmatched]:
    """The patterns of `policy` that match none of `names`, each with a close name if any."""
    known = sorted(set(names))
    found: list[Unmatched] = []
    for field, patterns in (("allow", policy.allow), ("deny", policy.deny)):
        for index, pattern in enumerate(patterns):
            if any(fnmatch.fnmatchcase(name, pattern) for name in known):
                continue
            close = difflib.get_close_matches(pattern, known, n=1, cutoff=0.6)
            kind: Literal["allow", "deny"] = "allow" if field == "allow" else "deny"
            found.append(Unmatched(kind, index, pattern, close[0] if close else None))
    return found
