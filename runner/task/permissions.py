"""Permission rules (DESIGN sections 7b and 14): `TOOL(GLOB)` over a call's main argument.

`execute_command(git push*)` matches a call of execute_command whose `command` matches the glob;
`write_to_file(.github/**)` one whose `path` does. The main argument is `command` for
execute_command, `path` for the workspace's file tools, and the first required string parameter
for any other tool. `TOOL` is itself a glob over tool names; a bare `TOOL` matches every call of
it. Deny wins; a tool named by an allow rule may only be called with arguments an allow rule
matches. The runner enforces them (`runner.run.guard.permissions`) before a call reaches a server.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Permissions", "Rule", "parse_rule", "unmatched_rules"]

_RULE = re.compile(r"([^\s()]+)\s*(?:\((.*)\))?", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """One parsed rule."""

    text: str
    """As written, to name it in errors."""
    tool: str
    """Glob over tool names."""
    argument: str | None
    """Glob over the main argument; None matches every call."""

    def names(self, tool: str) -> bool:
        """The rule is about `tool`."""
        return fnmatch.fnmatchcase(tool, self.tool)


def parse_rule(text: str) -> Rule:
    """A rule from `TOOL(GLOB)` or `TOOL`; ValueError says how to write it."""
    match = _RULE.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a permission rule; write TOOL(GLOB), e.g. execute_command(git push*)"
        )
    return Rule(text=text, tool=match.group(1), argument=match.group(2))


class Permissions(BaseModel):
    """Rules over tool calls' main arguments; deny wins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[str] = Field(default_factory=list)
    """A tool named here may only be called with a main argument one of its rules matches."""
    deny: list[str] = Field(default_factory=list)
    """Calls these rules match get an error result naming the rule, and never run."""

    @field_validator("allow", "deny")
    @classmethod
    def _rules_parse(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_rule(text)
        return value

    def rules(self) -> tuple[list[Rule], list[Rule]]:
        """(allow rules, deny rules), parsed."""
        return [parse_rule(t) for t in self.allow], [parse_rule(t) for t in self.deny]

    def __bool__(self) -> bool:
        return bool(self.allow or self.deny)


def unmatched_rules(permissions: Permissions, tools: Iterable[str]) -> list[tuple[str, int, str]]:
    """(`allow`/`deny`, index, rule) for each rule whose TOOL matches none of `tools`."""
    names = list(tools)
    allow, deny = permissions.rules()
    found = []
    for kind, rules in (("allow", allow), ("deny", deny)):
        for index, rule in enumerate(rules):
            if not any(rule.names(name) for name in names):
                found.append((kind, index, rule.text))
    return found
