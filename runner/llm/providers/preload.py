"""Build an SDK client in a background thread, so that its import overlaps the MCP servers' start.

Importing `openai` or `anthropic` and making a client costs about a second of CPU on a small
machine. The runner makes its models before it starts the task's MCP servers and then waits for
them; built here, the client is ready by the time the first request needs it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Preload"]

T = TypeVar("T")


class Preload(Generic[T]):
    """`build()` run in a thread from construction on; `get()` waits for it and returns its value
    (or raises its exception)."""

    def __init__(self, build: Callable[[], T], name: str = "preload") -> None:
        self._build = build
        self._value: T | None = None
        self._error: BaseException | None = None
        self._done = False
        # Not a daemon: an interpreter that exits mid-import would print a confusing traceback.
        self._thread = threading.Thread(target=self._run, name=name)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._build()
        except BaseException as error:  # handed to the caller of get()
            self._error = error

    def get(self) -> T:
        """The built value; blocks until the thread is done (at most once)."""
        if not self._done:
            self._thread.join()
            self._done = True
            # What the SDK import built lives as long as the process: the collector need not walk
            # it again (the session froze what existed before the loop, while this may still have
            # been importing; without it, the first turn pays a full collection of the SDK).
            gc.freeze()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
