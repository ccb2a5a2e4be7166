"""Hooks in a task file or the config file (DESIGN section 14): shell commands run at events.

`pre_tool` and `post_tool` entries take `match` (tool-name globs); the session events do not.
A task's hooks run after the config file's (`with_config_hooks`); run them with
`runner.run.guard.hooks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from runner.errors import ConfigError
from runner.task.duration import parse_duration

__all__ = ["DEFAULT_HOOK_TIMEOUT_S", "Hook", "Hooks", "ToolHook", "parse_config_hooks"]

DEFAULT_HOOK_TIMEOUT_S = 60.0
MAX_HOOK_TIMEOUT_S = 1800.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Hook(_Strict):
    """One command run at a session event (`stop`, `session_start`, `session_end`)."""

    run: str = Field(min_length=1)
    """Shell command, run in the workdir with the event as JSON on stdin."""
    timeout: Annotated[float, BeforeValidator(parse_duration), Field(le=MAX_HOOK_TIMEOUT_S)] = (
        DEFAULT_HOOK_TIMEOUT_S
    )
    """Time limit (`30s`, `2m`); at the limit the command's whole process group is killed."""


class ToolHook(Hook):
    """One command run around tool calls (`pre_tool`, `post_tool`)."""

    match: list[str] = Field(default_factory=lambda: ["*"])
    """Tool-name globs the hook runs for; default: every tool."""


class Hooks(_Strict):
    """Commands by event; each list runs in order."""

    pre_tool: list[ToolHook] = Field(default_factory=list)
    """Before a tool call: exit 2 blocks it (stderr is its error result); printing
    `{"arguments": {...}}` rewrites it."""
    post_tool: list[ToolHook] = Field(default_factory=list)
    """After a tool call: stdout is appended to the result the model sees."""
    stop: list[Hook] = Field(default_factory=list)
    """When the agent calls attempt_completion: exit 2 refuses it (stderr goes to the agent)."""
    session_start: list[Hook] = Field(default_factory=list)
    """Before the first model call: stdout is added to the first user message."""
    session_end: list[Hook] = Field(default_factory=list)
    """After the session ended; the exit status is ignored."""

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in type(self).model_fields)

    def after(self, first: Hooks) -> Hooks:
        """`first`'s hooks, then these, event by event."""
        return Hooks(
            **{
                name: [*getattr(first, name), *getattr(self, name)]
                for name in type(self).model_fields
            }
        )


def parse_config_hooks(data: Mapping[str, Any]) -> Hooks:
    """The config file's `hooks:`, or ConfigError naming the bad field."""
    try:
        return Hooks.model_validate(dict(data))
    except ValidationError as exc:
        lines = []
        for error in exc.errors(include_input=False):
            where = ".".join(str(part) for part in error["loc"])
            lines.append(f"setting hooks.{where}: {error['msg'].removeprefix('Value error, ')}")
        raise ConfigError(
            "invalid hooks in the config file (see docs/hooks-and-skills.md):\n  "
            + "\n  ".join(lines)
        ) from None
