"""Enforcing `permissions` rules (DESIGN sections 7b and 14) before a call reaches a server.

The rules (`runner.task.permissions`) are matched against a call's main argument, normalised so
that spelling does not slip past a rule: a path is also matched as its real path relative to the
workdir (`./.github/x`, `src/../.github/x` and a symlink into `.github` all count as
`.github/x`), and a command is also matched as each simple command inside it
(`runner.run.guard.commandline`: `cd x && git push` and `echo $(git push)` hold `git push`),
quotes removed, runs of spaces collapsed and leading `VAR=value` assignments dropped, and for
deny rules also as the command a precommand runs (`nice -n 5 git push`, `env A=1 git push`:
`runner.run.guard.precommand`). Deny rules match when any form matches. Allow rules must
match the real path, or, for a command, the one simple command it is (DESIGN 18): a command
with a redirection, a pipe, a list (`;`, `&&`, `||`, `&`, a newline), a subshell, a
substitution, an assignment prefix, or one that cannot be read, is never allowed by an allow
rule. This guards against mistakes, not against a determined agent: the
sandbox is the security boundary (DESIGN section 15).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from runner.errors import ConfigError
from runner.run.guard.commandline import split_command
from runner.run.guard.precommand import unwrapped
from runner.task import Permissions, Rule, unmatched_rules
from runner.toolcall import ToolSpec
from runner.workspace import DESCRIPTIONS

__all__ = ["PermissionGate", "answers_to", "check_rules_match", "main_argument"]

_SEGMENT_BREAK = re.compile(r"&&|\|\||\$\(|[;|&\n()`]")
_ASSIGNMENT = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+")
_PATH_TOOLS = {name for name in DESCRIPTIONS if name != "execute_command"}


def main_argument(spec: ToolSpec) -> str | None:
    """The parameter rules match: `command`, `path`, or the first required string parameter."""
    if spec.call_name == "execute_command" and spec.server == "workspace":
        return "command"
    if spec.call_name in _PATH_TOOLS and spec.server == "workspace":
        return "path"
    schema = spec.input_schema or {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or []:
        slot = properties.get(name)
        if isinstance(slot, Mapping) and slot.get("type") == "string":
            return str(name)
    return None


def answers_to(spec: ToolSpec) -> set[str]:
    """Every name a rule may use for the tool: its exposed name, its name on the server, and
    `server__tool` (as `tools.allow`/`tools.deny` globs do)."""
    names = {spec.name, spec.call_name}
    if spec.server:
        names.add(f"{spec.server}__{spec.call_name}")
    return names


class PermissionGate:
    """Says whether a call may run under the task's rules."""

    def __init__(self, permissions: Permissions, workdir: Path) -> None:
        self._allow, self._deny = permissions.rules()
        self._workdir = workdir

    def refusal(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
        """The error result for a call the rules forbid, or None when it may run."""
        names = answers_to(spec)
        deny = [rule for rule in self._deny if any(rule.names(name) for name in names)]
        allow = [rule for rule in self._allow if any(rule.names(name) for name in names)]
        if not deny and not allow:
            return None
        key = main_argument(spec)
        value = arguments.get(key) if key else None
        text = value if isinstance(value, str) else ""
        loose, strict = self._forms(spec, key, text)
        for rule in deny:
            if any(_matches(rule, form) for form in loose):
                return (
                    f"Error: the call of {spec.name!r} is denied by the permission rule "
                    f"{rule.text!r} (permissions.deny); it was not run."
                )
        if not allow:
            return None
        rules = ", ".join(repr(rule.text) for rule in allow)
        if not strict:
            return (
                f"Error: the call of {spec.name!r} is not allowed: permissions.allow ({rules}) "
                "matches only a single simple command, and this one has a redirection, a pipe, "
                "a list (;, &&, ||, &, newline), a subshell, a substitution or a VAR=value "
                "prefix, or cannot be read; it was not run. Run each command on its own."
            )
        if not all(any(_matches(rule, form) for rule in allow) for form in strict):
            return (
                f"Error: the call of {spec.name!r} is not allowed: no permission rule of "
                f"permissions.allow matches it ({rules}); it was not run."
            )
        return None

    def _forms(self, spec: ToolSpec, key: str | None, text: str) -> tuple[set[str], list[str]]:
        """(forms any deny rule may match, forms every one of which an allow rule must match;
        none for a command that is not one simple command: no allow rule matches it)."""
        if key == "command" and spec.server == "workspace":
            line = split_command(text)
            whole = " ".join(text.split())
            plain = line.plain
            simple = {*_pieces(text), *line.commands}
            inner = {form for command in simple for form in unwrapped(command)}
            return {text, whole, *simple, *inner}, [plain] if plain else []
        if key == "path" and spec.server == "workspace":
            real = self._real(text)
            plain = posixpath.normpath(text).removeprefix("./") if text else text
            return {text, plain, real}, [real]
        return {text}, [text]

    def _real(self, path: str) -> str:
        """`path` as the real path relative to the workdir (or absolute when outside it)."""
        if not path:
            return path
        root = Path(os.path.realpath(self._workdir))
        given = Path(path)
        real = Path(os.path.realpath(given if given.is_absolute() else root / given))
        try:
            return real.relative_to(root).as_posix() or "."
        except ValueError:
            return real.as_posix()


def _pieces(command: str) -> list[str]:
    pieces = []
    for part in _SEGMENT_BREAK.split(command):
        piece = " ".join(part.split())
        piece = _ASSIGNMENT.sub("", piece)
        if piece:
            pieces.append(piece)
    return pieces


def _matches(rule: Rule, text: str) -> bool:
    return rule.argument is None or fnmatch.fnmatchcase(text, rule.argument)


def check_rules_match(permissions: Permissions, tools: Iterable[str], where: str) -> None:
    """ConfigError when a rule names no tool of `tools`: a typo must not let a call through."""
    names = sorted(set(tools))
    unmatched = unmatched_rules(permissions, names)
    if unmatched:
        lines = [f"permissions.{kind}[{index}] {rule!r}" for kind, index, rule in unmatched]
        raise ConfigError(
            f"{where}: permission rule(s) that match no tool: {', '.join(lines)} "
            f"(tools: {', '.join(names) or 'none'}; fix the tool name before the parenthesis)"
        )
