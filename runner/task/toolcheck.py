"""`tools.allow`/`tools.deny` patterns checked when the task loads (see runner/mcp/policy.py)."""

from __future__ import annotations

from collections.abc import Mapping

from runner.mcp import (
    BUILTIN_TOOL_NAMES,
    WORKSPACE,
    ExtensionConfig,
    ToolPolicy,
    Unmatched,
    unmatched_patterns,
)

__all__ = ["static_unmatched"]


def static_unmatched(
    policy: ToolPolicy, extensions: Mapping[str, ExtensionConfig]
) -> list[Unmatched]:
    """Patterns that match no tool, when the tools are known without starting a server: the
    task's only enabled server is the built-in workspace (or none is). Otherwise [] and the run
    checks them against the servers' real tool lists."""
    enabled = [name for name, ext in extensions.items() if ext.enabled]
    if any(name != WORKSPACE for name in enabled):
        return []
    names = BUILTIN_TOOL_NAMES if enabled else {"attempt_completion", "sub_agent"}
    return unmatched_patterns(policy, names)
