"""The command line's task limits and policy over the tasks' own (DESIGN 20), on run and resume.

`--max-turns`, `--max-tokens`, `--task-max-cost-usd` and `--timeout` replace the task's limit;
`--allow-tool` and `--deny-tool` add permission rules to the task's (deny still wins);
`--append-system-prompt` adds a prompt section of its own, `APPENDED`, the prompt's last.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from runner.errors import ConfigError
from runner.prompt import APPENDED_SECTION
from runner.task import Limits, Permissions, Task, parse_duration

__all__ = ["APPENDED_SECTION", "TaskOverrides"]


_FLAGS = {
    "max_turns": "--max-turns",
    "max_tokens": "--max-tokens",
    "max_cost_usd": "--task-max-cost-usd",
    "timeout": "--timeout",
}


@dataclass(frozen=True)
class TaskOverrides:
    """What the command line sets over every task; None or empty leaves the task's own."""

    max_turns: int | None = None
    """`--max-turns`: model calls per task."""
    max_tokens: int | None = None
    """`--max-tokens`: input plus output tokens per task."""
    max_cost_usd: float | None = None
    """`--task-max-cost-usd`: cost per task (`--max-cost-usd` is the run's cap)."""
    timeout: str | None = None
    """`--timeout`: wall time per task, as written (90s, 20m, 1h)."""
    allow: tuple[str, ...] = ()
    """`--allow-tool`: permission rules added to each task's `permissions.allow`."""
    deny: tuple[str, ...] = ()
    """`--deny-tool`: permission rules added to each task's `permissions.deny`."""
    append_system_prompt: str | None = None
    """`--append-system-prompt`: text added to the system prompt."""

    def limits(self) -> dict[str, Any]:
        """The limits the flags set, by `Limits` field; ConfigError names a bad flag."""
        raised: dict[str, Any] = {
            key: getattr(self, key) for key in _FLAGS if getattr(self, key) is not None
        }
        if self.timeout is not None:
            try:
                raised["timeout"] = parse_duration(self.timeout)
            except ValueError as exc:
                raise ConfigError(f"--timeout: {exc}") from None
        for key, value in raised.items():
            try:
                Limits.model_validate({key: value})
            except ValidationError as exc:
                message = exc.errors()[0]["msg"]
                raise ConfigError(f"{_FLAGS[key]} {value}: {message}") from None
        return raised

    def check(self) -> None:
        """Raise ConfigError (exit 2, before anything runs) naming a flag that is not valid."""
        self.limits()
        for flag, rules in (("--allow-tool", self.allow), ("--deny-tool", self.deny)):
            try:
                Permissions.model_validate({"allow": list(rules)})
            except ValidationError as exc:
                raise ConfigError(f"{flag}: {exc.errors()[0]['msg']}") from None

    def apply(self, task: Task) -> Task:
        """The task with the flags' limits, rules and appended prompt over its own."""
        update: dict[str, Any] = {}
        if raised := self.limits():
            update["limits"] = Limits.model_validate({**task.spec.limits.model_dump(), **raised})
        if self.allow or self.deny:
            own = task.spec.permissions
            update["permissions"] = Permissions(
                allow=[*own.allow, *self.allow], deny=[*own.deny, *self.deny]
            )
        if self.append_system_prompt:
            sections = dict(task.spec.sections)
            before = sections.get(APPENDED_SECTION)
            text = self.append_system_prompt
            sections[APPENDED_SECTION] = f"{before}\n\n{text}" if before else text
            update["sections"] = sections
        if not update:
            return task
        return replace(task, spec=task.spec.model_copy(update=update))
