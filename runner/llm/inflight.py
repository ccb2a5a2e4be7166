"""What a task has in flight right now, for the heartbeat (DESIGN section 23).

A task's heartbeat said `turn=0 tokens=0` every 30 s for the six minutes a local model took to
write one reply. Now the loop marks what it waits for (`activity("model call")`, `activity("tool
NAME")`), a streaming provider counts what has arrived (`streamed`), and the heartbeat reads it
(`InFlight.leaves`, which `runner.run.telemetry.progress` puts into words with the console's
own formats): `model call 2m10s, ~1,234 tokens streamed` or `tool execute_command 45.0s`.

The marks live in a context variable, so they follow the task into everything it awaits and into
the tasks it starts: a sub-agent's model call shows under its parent's `sub_agent` call, and
parallel calls each show. Outside a tracked task (`track`), every function here does nothing.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["CHARS_PER_TOKEN", "Activity", "InFlight", "activity", "streamed", "track"]

CHARS_PER_TOKEN = 4
"""The runner's one rough estimate of characters per token (providers' prompt estimates, compaction,
the heartbeat's "~N tokens streamed"): only its ratio to a window or a count matters."""


@dataclass(eq=False)
class Activity:
    """One thing a task waits for."""

    what: str
    """`model call` or `tool NAME`."""
    parent: Activity | None
    """The activity this one runs inside (a sub-agent's call inside the parent's `sub_agent`)."""
    since: float = field(default_factory=time.monotonic)
    """`time.monotonic()` when it began."""
    streamed_chars: int = 0
    """Characters of the reply streamed so far (model calls)."""

    def chain(self) -> list[Activity]:
        """The activities this one runs inside, outermost first, then itself."""
        return [*(self.parent.chain() if self.parent is not None else []), self]


class InFlight:
    """The activities of one task under way, in the order they began."""

    def __init__(self) -> None:
        self._active: list[Activity] = []

    def leaves(self) -> list[Activity]:
        """The innermost activities (each `chain()` names those it runs inside), in order."""
        parents = {id(a.parent) for a in self._active if a.parent is not None}
        return [a for a in self._active if id(a) not in parents]

    def _add(self, item: Activity) -> None:
        self._active.append(item)

    def _remove(self, item: Activity) -> None:
        self._active = [a for a in self._active if a is not item]


_CURRENT: contextvars.ContextVar[tuple[InFlight, Activity | None] | None] = contextvars.ContextVar(
    "in_flight", default=None
)


@contextmanager
def track(in_flight: InFlight) -> Iterator[InFlight]:
    """Record the activities of the code run inside (and of the tasks it starts) in
    `in_flight`."""
    token = _CURRENT.set((in_flight, None))
    try:
        yield in_flight
    finally:
        _CURRENT.reset(token)


@contextmanager
def activity(what: str) -> Iterator[None]:
    """Mark `what` as in flight while the block runs (nothing outside `track`)."""
    current = _CURRENT.get()
    if current is None:
        yield
        return
    in_flight, parent = current
    item = Activity(what, parent)
    in_flight._add(item)
    token = _CURRENT.set((in_flight, item))
    try:
        yield
    finally:
        _CURRENT.reset(token)
        in_flight._remove(item)


def streamed(chars: int) -> None:
    """`chars` more characters of the reply of the model call in flight have arrived."""
    current = _CURRENT.get()
    if current is not None and current[1] is not None:
        current[1].streamed_chars += chars
