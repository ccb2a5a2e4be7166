"""The loop's side of the deferred catalogue (DESIGN section 28): `find_tools` answered from the
session's `ToolShelf`, the native request's tool list narrowed to what is loaded, and the loaded
tools announced again after a compaction (their definitions may have been cleared with it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from runner.llm import Message, NativeTools
from runner.prompt import FIND_TOOLS, ToolShelf, found_text, loaded_announcement
from runner.run.turn.native import append_user
from runner.toolcall import ToolResult

__all__ = ["ShelfExecutor", "announce_loaded", "narrowed"]


class ShelfExecutor:
    """Answers `find_tools` (the runner's own tool) and passes every other call to `inner`."""

    def __init__(self, inner: Any, shelf: ToolShelf, native: bool, offered: Collection[str]):
        self._inner = inner
        self._shelf = shelf
        self._native = native
        self._offered = set(offered)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name != FIND_TOOLS:
            result: ToolResult = await self._inner.call(name, arguments)
            return result
        query = str(arguments.get("query", ""))
        found = self._shelf.search(query)
        self._shelf.load(spec.name for spec in found)
        names = [spec.name for spec in found]
        # The log names what was loaded, so that a resumed session loads it again.
        fields = {"loaded_tools": names} if names else {}
        text = found_text(found, query, self._native, self._offered)
        return ToolResult(text, is_error=not found, log_fields=fields)


def narrowed(native: NativeTools | None, shelf: ToolShelf | None) -> NativeTools | None:
    """The tools one native request lists: those not deferred, and those loaded."""
    if native is None or not shelf:
        return native
    return dataclasses.replace(native, specs=tuple(shelf.visible(native.specs)))


def announce_loaded(
    messages: list[Message],
    events: Any,
    shelf: ToolShelf | None,
    native: bool,
    offered: Collection[str],
    turn: int,
) -> None:
    """After a compaction: name the loaded tools again (xml: with their definitions), in the
    context and the log."""
    if not shelf or not shelf.loaded:
        return
    text = loaded_announcement(shelf, native, set(offered))
    fields = append_user(messages, text)
    events.message("user", text, turn, **fields)
