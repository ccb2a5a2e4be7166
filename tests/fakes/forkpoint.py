"""Make a task's time limit expire at the worst moment of a process start: just after the fork.

`asyncio.create_subprocess_*` (and anyio's `open_process` on it) forks, then awaits the event
loop while it connects the process's pipes. A cancellation landing there used to leave a command
running with nobody to kill it (`runner.workspace.sandbox.shell.start_group`). The fixture makes
exactly that happen, without relying on timing.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass
class ForkPoint:
    """Armed with `arm`, the next process started makes the time limit expire just after its
    fork (before asyncio has connected its pipes), once the command has made `ready`: its child
    then exists, and holds the pipes."""

    armed: list[tuple[asyncio.Timeout, Path]] = field(default_factory=list)

    def arm(self, limit: asyncio.Timeout, ready: Path) -> None:
        self.armed.append((limit, ready))

    def fired(self) -> bool:
        return not self.armed


def expire_after_the_fork(monkeypatch: pytest.MonkeyPatch) -> ForkPoint:
    point = ForkPoint()
    transport = asyncio.unix_events._UnixSubprocessTransport  # type: ignore[attr-defined]
    real_start = transport._start

    def start_then_expire(self: Any, *args: Any, **kwargs: Any) -> None:
        real_start(self, *args, **kwargs)
        while point.armed:
            limit, ready = point.armed.pop()
            deadline = time.monotonic() + 10
            while not ready.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            limit.reschedule(asyncio.get_running_loop().time())

    monkeypatch.setattr(transport, "_start", start_then_expire)
    return point
