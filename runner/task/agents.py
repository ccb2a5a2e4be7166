"""Sub-agents in a task file (DESIGN section 13): the `agents:` mapping and its checks.

An agent is a named child session the parent may start with the `sub_agent` tool. It is written
under `agents:` in a task, a suite's `defaults:` or the config file; a task's agent replaces a
config agent of the same name key by key.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runner.errors import Problem
from runner.mcp import ToolPolicy
from runner.task.duration import parse_duration

__all__ = [
    "AGENT_NAME",
    "AgentLimits",
    "AgentSpec",
    "agent_tool_problems",
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


def agent_tool_problems(
    file: Path,
    task_line: int,
    agents: Mapping[str, AgentSpec],
    every: Iterable[str],
    allowed: Iterable[str],
) -> list[Problem]:
    """Problems of the agents' allowlists against the task's tools, as `file:line` problems:
    a glob that matches no tool at all (a typo), and an agent whose allowlist matches no tool
    the task itself may call (the parent's policy always applies to its children)."""
    every_names, allowed_names = list(every), set(allowed)
    problems: list[Problem] = []
    for name, agent in agents.items():
        before = len(problems)
        for index, pattern in enumerate(agent.tools.allow):
            if not any(fnmatch.fnmatchcase(tool, pattern) for tool in every_names):
                line, column = _position(file, task_line, (name, "tools", "allow", index))
                problems.append(
                    Problem(
                        str(file),
                        line,
                        column,
                        f"agents.{name}.tools.allow[{index}]",
                        f"{pattern!r} matches no tool",
                        f"tools: {', '.join(sorted(every_names)) or 'none'}",
                    )
                )
        usable = [tool for tool in allowed_names if _allows(agent.tools, tool)]
        if agent.tools.allow and not usable and len(problems) == before:
            line, column = _position(file, task_line, (name, "tools", "allow"))
            problems.append(
                Problem(
                    str(file),
                    line,
                    column,
                    f"agents.{name}.tools.allow",
                    "the allowlist matches no tool the task may call (the task's own "
                    "`tools:` policy also binds its agents)",
                    "allow tools the task allows, or loosen the task's `tools:`",
                )
            )
    return problems


def _allows(policy: ToolPolicy, tool: str) -> bool:
    allowed = any(fnmatch.fnmatchcase(tool, p) for p in policy.allow)
    return allowed and not any(fnmatch.fnmatchcase(tool, p) for p in policy.deny)


def _position(file: Path, task_line: int, inside: tuple[str | int, ...]) -> tuple[int, int]:
    """Where `agents.<inside>` is written for the task at `task_line` of `file` (its own
    `agents:`, else its suite's `defaults:`); the task's line when neither holds it."""
    from runner.task.yamlsource import YamlError, load_located

    try:
        located = load_located(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YamlError):
        return task_line, 1
    if located is None:
        return task_line, 1
    bases: list[tuple[str | int, ...]] = [()]
    if isinstance(located.data, dict) and isinstance(located.data.get("tasks"), list):
        index = next(
            (
                i
                for i in range(len(located.data["tasks"]))
                if located.where(("tasks", i))[0] == task_line
            ),
            None,
        )
        bases = [("tasks", index)] if index is not None else []
        bases.append(("defaults",))
    for base in bases:
        path = (*base, "agents", *inside)
        if path in located.marks:
            return located.marks[path]
    return task_line, 1
