"""Which read-only calls of a reply run at the same time (DESIGN 16).

Calls of read-only tools (the workspace's read_file, list_files and search_files; MCP tools
whose annotations say `readOnlyHint: true`) that follow each other in a reply run at once, at
most `max_parallel_reads` at a time; their results, log events and result caps come back in call
order (`runner.run.turn.batch`, `runner.run.turn.loop`). Anything else in the reply is a barrier.
The sub_agent calls' lane joins this one in `runner.run.agents.call_concurrency`.

A tool that a `pre_tool` or `post_tool` hook matches is left out: hooks are commands of the
user's with effects of their own (a hook may log, count or rewrite), and they run, and are
logged, one call after another as they always did.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from runner.run.turn.batch import Lane
from runner.task import Task
from runner.toolcall import ToolSpec

__all__ = ["read_lane"]


def read_lane(task: Task, tools: Sequence[ToolSpec], limit: int) -> Lane:
    """The offered read-only tools that no tool hook matches, `limit` calls at a time."""
    hooks = task.spec.hooks
    globs = [glob for hook in (*hooks.pre_tool, *hooks.post_tool) for glob in hook.match]
    names = {
        spec.name
        for spec in tools
        if spec.read_only and not any(fnmatch.fnmatchcase(spec.name, g) for g in globs)
    }
    return Lane(frozenset(names), limit) if limit > 1 else Lane()
