"""The deferred catalogue (DESIGN section 28): a large set of MCP tools is listed by name and one
line, and the runner's own `find_tools(query)` tool loads the full definitions of the matches.

`defer` decides which tools wait (`tool_search: auto | always | never`, past a tenth of the
context window or 30 MCP tools by default); a `ToolShelf` holds them and what has been loaded.
The workspace's own tools and the runner's tools (attempt_completion, sub_agent, load_skill) are
never deferred: they are the few every task uses, and the default prompt budget counts them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from runner.prompt.accounting import tokens_of, tool_json
from runner.prompt.escape import inline_name
from runner.toolcall import ToolSpec

__all__ = [
    "FIND_TOOLS",
    "MAX_MATCHES",
    "ToolSearch",
    "ToolShelf",
    "defer",
    "find_tools_spec",
    "one_line",
]

FIND_TOOLS = "find_tools"
"""The runner's tool that loads deferred tools' definitions."""
MAX_MATCHES = 5
"""Tools one search by words loads at most (exact names load all they name)."""
_NEVER_DEFERRED = frozenset({"workspace"})
"""Servers whose tools are always described in full: the built-in workspace."""
_WORD = re.compile(r"[a-z0-9]+")

ToolSearchMode = Literal["auto", "always", "never"]


@dataclass(frozen=True)
class ToolSearch:
    """When MCP tools are deferred behind `find_tools` (the config's `tool_search`, a task's
    `tool_search` over its mode)."""

    mode: ToolSearchMode = "auto"
    """`auto`: past either threshold; `always`: every MCP tool but the workspace's; `never`."""
    max_tools: int = 30
    """`auto` defers when the deferrable MCP tools number more than this."""
    window_share: float = 0.1
    """`auto` defers when their definitions would take more than this share of the window."""


def find_tools_spec() -> ToolSpec:
    """The `find_tools` tool, as the catalogue offers it."""
    return ToolSpec(
        name=FIND_TOOLS,
        description=(
            "Load the full definitions of tools listed under DEFERRED TOOLS, so that you can "
            "call them. Give exact tool names (several, separated by spaces or commas), or a few "
            "words of what you need; a loaded tool stays loaded."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Tool names, or words of a tool's name and description.",
                }
            },
            "required": ["query"],
        },
    )


def one_line(spec: ToolSpec, limit: int = 60) -> str:
    """The first sentence (or line) of a tool's description without its full stop, cut to
    `limit` characters."""
    text = " ".join(spec.description.strip().split("\n", 1)[0].split())
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].removesuffix(".")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _deferrable(spec: ToolSpec) -> bool:
    return bool(spec.server) and spec.server not in _NEVER_DEFERRED


def defer(
    tools: Sequence[ToolSpec], search: ToolSearch, context_window: int | None
) -> list[ToolSpec]:
    """The tools of `tools` to defer: none under `never`, every deferrable one under `always`,
    and under `auto` all of them once they number more than `max_tools` or their definitions
    take more than `window_share` of `context_window` (when it is known)."""
    candidates = [spec for spec in tools if _deferrable(spec)]
    if search.mode == "never" or not candidates:
        return []
    if search.mode == "always":
        return candidates
    size = sum(tokens_of(len(tool_json(spec))) for spec in candidates)
    too_big = context_window is not None and size > context_window * search.window_share
    return candidates if len(candidates) > search.max_tools or too_big else []


@dataclass
class ToolShelf:
    """The deferred tools of one session and the names loaded so far (in load order)."""

    deferred: dict[str, ToolSpec] = field(default_factory=dict)
    loaded: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, deferred: Iterable[ToolSpec], loaded: Iterable[str] = ()) -> ToolShelf:
        shelf = cls({spec.name: spec for spec in deferred})
        shelf.load([name for name in loaded if name in shelf.deferred])
        return shelf

    def __bool__(self) -> bool:
        return bool(self.deferred)

    def hidden(self, name: str) -> bool:
        """Whether `name` is deferred and not loaded yet."""
        return name in self.deferred and name not in self.loaded

    def visible(self, tools: Sequence[ToolSpec]) -> list[ToolSpec]:
        """`tools` without those still deferred (a native request's tool list)."""
        return [spec for spec in tools if not self.hidden(spec.name)]

    def load(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.deferred and name not in self.loaded:
                self.loaded.append(name)

    def search(self, query: str) -> list[ToolSpec]:
        """The deferred tools `query` names exactly, else those that match its words best (at
        most `MAX_MATCHES`, in catalogue order): a word of the tool's name counts double one of
        its description, and only the best score loads."""
        by_lower = {name.lower(): name for name in self.deferred}
        named = [by_lower[t] for t in re.split(r"[\s,]+", query.strip().lower()) if t in by_lower]
        if named:
            return [self.deferred[name] for name in dict.fromkeys(named)]
        words = set(_WORD.findall(query.lower()))
        scored: list[tuple[int, int, ToolSpec]] = []
        for index, spec in enumerate(self.deferred.values()):
            name_words = set(_WORD.findall(spec.name.lower()))
            about = set(_WORD.findall(spec.description.lower()))
            score = sum(2 if w in name_words else 1 if w in about else 0 for w in words)
            if score:
                scored.append((-score, index, spec))
        if not scored:
            return []
        best = min(scored, key=lambda s: s[0])[0]
        top = sorted((s for s in scored if s[0] == best), key=lambda s: s[1])
        return [spec for _, _, spec in top[:MAX_MATCHES]]

    def listing(self) -> str:
        """The DEFERRED TOOLS section's text: how to load them, then one line per tool."""
        lines = [
            f"These tools are not described here: call {FIND_TOOLS} with their names (or words "
            "of what you need) to load their definitions, then call them.",
            "",
        ]
        lines += [
            f"{inline_name(name)}: {inline_name(one_line(spec))}"
            for name, spec in self.deferred.items()
        ]
        return "\n".join(lines)

    def loaded_specs(self) -> list[ToolSpec]:
        return [self.deferred[name] for name in self.loaded]
