"""Sub-agents in a task file (DESIGN section 13): the `agents:` mapping and its checks.

An agent is a named child session the parent may start with the `sub_agent` tool. It is written
under `agents:` in a task, a suite's `defaults:` or the config file; a task's agent replaces a
config agent of the same name key by key.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runner.errors import Problem
from runner.mcp import ToolPolicy

__all__ = [
    "AGENT_NAME",
    "AgentLimits",
    "AgentSpec",
    "check_agent_names",
    "config_agent_layer",
    "unmatched_allow_patterns",
]

AGENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
"""An agent's name: it is a value of the `sub_agent` tool's enum and part of a session id."""


class AgentLimits(BaseModel):
    """A child session's own budgets; the parent's remaining budget bounds them too."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int | None = Field(20, gt=0)
    """Model calls of one child session (turn limits are per session)."""
    max_tokens: int | None = Field(None, gt=0)
    """Input plus output tokens of one child session."""
    max_cost_usd: float | None = Field(None, gt=0)
    """Cost of one child session in US dollars."""
    timeout: float | None = Field(None, gt=0)
    """Wall time of one child session in seconds (`90s`, `5m` are accepted too)."""

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        from runner.task.model import parse_duration  # model imports this module

        return None if value is None else parse_duration(value)


class AgentSpec(BaseModel):
    """One agent under `agents:`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field(min_length=1)
    """What the agent is for: shown to the parent in the `sub_agent` tool."""
    prompt: str = Field(min_length=1)
    """The child's ROLE section."""
    tools: ToolPolicy = ToolPolicy()
    """Which tools the child may call, within the parent's own policy."""
    model: str | None = None
    """`PROVIDER:MODEL` of the child; default: the parent's model."""
    limits: AgentLimits = AgentLimits()
    """The child's budgets."""

    @field_validator("model")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        if value is None or ":" not in value:
            return value
        from runner.llm import provider_names

        provider = value.split(":", 1)[0]
        known = provider_names()
        if provider not in known:
            raise ValueError(
                f"unknown model provider {provider!r}: known providers are {', '.join(known)}"
            )
        return value


def check_agent_names(agents: Mapping[str, Any]) -> list[str]:
    """The names of `agents` that are not valid agent names."""
    return [name for name in agents if not AGENT_NAME.fullmatch(str(name))]


def unmatched_allow_patterns(agent: AgentSpec, tool_names: Iterable[str]) -> list[str]:
    """The agent's allow globs that match none of `tool_names` (a typo that allows nothing)."""
    names = list(tool_names)
    return [
        pattern
        for pattern in agent.tools.allow
        if not any(fnmatch.fnmatchcase(name, pattern) for name in names)
    ]


def config_agent_layer(agents: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """The config file's `agents:` that are valid, to merge under each task's own; a problem is
    appended for each one that is not (named by its key, as the config file has no positions)."""
    layer: dict[str, Any] = {}
    for name, raw in agents.items():
        where = f"agents.{name}"
        try:
            if not AGENT_NAME.fullmatch(str(name)):
                raise ValueError("an agent name uses letters, digits, '-' and '_'")
            AgentSpec.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors(include_input=False):
                at = ".".join(str(part) for part in error["loc"])
                message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
                problems.append(
                    Problem("config file", 0, 0, f"{where}.{at}", message, _CONFIG_HINT)
                )
            continue
        except ValueError as exc:
            problems.append(Problem("config file", 0, 0, where, str(exc), _CONFIG_HINT))
            continue
        layer[str(name)] = raw
    return layer


_CONFIG_HINT = "fix `agents:` in agent-runner.yaml (or the --config file)"
