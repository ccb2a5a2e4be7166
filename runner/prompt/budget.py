"""The BUDGET AND CHECK section: the task's limits and what will judge its work (DESIGN 12).

The agent plans better when it knows how many turns it has and which command decides whether it
passed. The check command is shown as the task file wrote it, with secrets masked by the caller.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from runner.prompt.sections import Section

__all__ = ["BUDGET_TITLE", "Budgeting", "budget_section"]

BUDGET_TITLE = "BUDGET AND CHECK"
_WIDTH = 99
"""As the static sections are wrapped."""


@dataclass(frozen=True)
class Budgeting:
    """What the agent is told about its limits and its judge."""

    max_turns: int | None = None
    """Model replies the task may use."""
    max_tokens: int | None = None
    """Input plus output tokens."""
    max_cost_usd: float | None = None
    timeout_s: float | None = None
    """Wall time, in seconds."""
    check: str | None = None
    """The success check command, secrets already masked."""
    check_retries: int = 0
    """How many times a failed check goes back to the agent."""
    requirements: tuple[str, ...] = ()
    """`success.require` in words, one per line."""


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=_WIDTH, break_long_words=False, break_on_hyphens=False)


def budget_section(facts: Budgeting) -> Section:
    """The section's text: limits first, then the check and the requirements, if any."""
    limits: list[str] = []
    if facts.max_turns is not None:
        limits.append(f"at most {facts.max_turns} turns (model replies)")
    if facts.max_tokens is not None:
        limits.append(f"{facts.max_tokens:,} tokens")
    if facts.max_cost_usd is not None:
        limits.append(f"${facts.max_cost_usd:.2f} of model cost")
    if facts.timeout_s is not None:
        limits.append(f"{_duration(facts.timeout_s)} of wall time")
    lines: list[str] = []
    if limits:
        lines.append(
            _wrap(
                f"You have {', '.join(limits)} for this task. Near a limit you will be told to "
                "finish."
            )
        )
    if facts.check:
        again = (
            f" If it fails, you get its output and {facts.check_retries} more attempt(s)."
            if facts.check_retries
            else " If it fails, the task fails."
        )
        lines += [
            "",
            _wrap(
                "When you call attempt_completion, this command runs in the working directory "
                f"and judges your work; it must exit with 0.{again}"
            ),
            "",
            *(f"    {line}" for line in facts.check.splitlines()),
        ]
    if facts.requirements:
        lines += ["", "The task also requires:", *(f"- {r}" for r in facts.requirements)]
    return Section(BUDGET_TITLE, "\n".join(lines).strip(), "generated")
