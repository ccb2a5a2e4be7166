"""How much one model reply may make the runner do, and how much one turn sends back.

2,000 `read_file` calls in one reply once made a 194 MB user message. The calls of a reply are
capped (`max_tool_calls_per_reply`): the rest do not run and get one error naming the limit. The
results of one turn together are capped too (`max_turn_results_chars`): a result that no longer
fits is cut, and once nothing fits, results are replaced by a note that names the limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from runner.toolcall import CallError, ToolCall

__all__ = ["DEFAULT_BOUNDS", "ReplyBounds", "ResultRoom", "split_calls"]

_LEAST_USEFUL_CUT = 2_000
"""Below this many characters left, a cut result helps less than a clear note."""


@dataclass(frozen=True)
class ReplyBounds:
    """The limits of one reply and one turn; the defaults are the settings' defaults."""

    max_calls: int = 50
    """Tool calls run from one reply."""
    max_results_chars: int = 400_000
    """Characters of tool results sent back in one turn, all calls together."""


DEFAULT_BOUNDS = ReplyBounds()


def split_calls(
    items: Sequence[ToolCall | CallError], max_calls: int
) -> tuple[list[ToolCall | CallError], str | None]:
    """The items that run, and the error for the ones that do not (None when all run)."""
    if len(items) <= max_calls:
        return list(items), None
    rest = items[max_calls:]
    counts = Counter(item.name if isinstance(item, ToolCall) else "(malformed)" for item in rest)
    which = ", ".join(f"{name} x{count}" for name, count in counts.most_common())
    return list(items[:max_calls]), (
        f"Error: your reply had {len(items)} tool calls; only the first {max_calls} ran (the "
        f"limit per reply, the max_tool_calls_per_reply setting). The other {len(rest)} did "
        f"not run ({which}): send the ones you still need in later messages."
    )


class ResultRoom:
    """What is left of one turn's room for tool results."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.left = max_chars

    def fit(self, tool: str, text: str) -> str:
        """`text` when it fits; else its head, or a note when too little room is left."""
        if len(text) <= self.left:
            self.left -= len(text)
            return text
        limit = f"{self.max_chars} characters (the max_turn_results_chars setting)"
        if self.left < _LEAST_USEFUL_CUT:
            self.left = 0
            return (
                f"Error: the result of {tool} was left out: this turn's tool results passed "
                f"{limit}. Call it again in a later message, or ask for less."
            )
        head = text[: self.left - 300]
        self.left = 0
        return (
            f"{head}\n... [result cut: this turn's tool results passed {limit}; "
            f"{len(text) - len(head)} characters left out. Ask for a smaller part.]"
        )
