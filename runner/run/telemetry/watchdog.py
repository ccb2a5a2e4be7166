"""SIGINT and SIGTERM for a run: handled on the event loop, and enforced when the loop is stuck.

A run handles a signal on its event loop: it cancels the tasks, which stop their servers and write
their end lines, and then the reports are written. That needs a loop that runs. When the loop is
blocked (a write to a stdout nobody reads, a file system that stopped answering, any call that
waits for ever), a handler on the loop never runs, and the run ignored SIGTERM until it was
SIGKILLed, with no JUnit and no summary.

So a signal is received by a thread of its own: the C-level handler writes the signal's number to
a socket (`signal.set_wakeup_fd`), the thread reads it and hands the signal to the loop. Then it
waits `grace_s` for the run to end. If it has not, the thread writes the reports itself from what
it knows (the tasks that finished, and every other one as interrupted), and ends the process with
the signal's exit code. Command process groups and temporary folders are then cleaned up by the
reaper, which sees the runner's pipe close.

What no Python thread can stop is C code that holds the GIL for ever (a backtracking regex in
`re`): that is why search_files runs its regex in a child process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Mapping
from types import FrameType, TracebackType
from typing import Any, Protocol, Self

__all__ = ["Watchdog"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_STOP = b"\x00"
"""Written by close() to end the thread: no signal has number 0."""


class _Loop(Protocol):
    """What the watchdog needs of an event loop (asyncio's)."""

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: object) -> object: ...


def _ignore(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: the work is done by the thread, from the wakeup socket."""


class Watchdog:
    """Owns SIGINT and SIGTERM from `start()` to `close()` (use it as a context manager).

    `codes` maps each signal to the run's exit code. `on_signal` is called on the event loop
    given to `attach()`; `on_stuck` is called on the watchdog's thread, once the grace period has
    passed and the run is still going: it writes the reports, and the process exits after it.
    """

    def __init__(
        self,
        grace_s: float,
        codes: Mapping[signal.Signals, int],
        on_stuck: Callable[[signal.Signals], None] | None = None,
    ) -> None:
        self.grace_s = grace_s
        self.codes = dict(codes)
        self.on_stuck = on_stuck
        self.received: signal.Signals | None = None
        """The first signal, once one arrived."""
        self._on_signal: Callable[[signal.Signals], None] | None = None
        self._loop: _Loop | None = None
        self._closed = threading.Event()
        self._reports_written = threading.Event()
        self._reporting = threading.Lock()
        self._previous: dict[signal.Signals, Any] = {}
        self._old_wakeup = -1
        self._receiver, self._sender = socket.socketpair()
        self._thread = threading.Thread(target=self._watch, name="signal-watchdog", daemon=True)

    def __enter__(self) -> Self:
        self._sender.setblocking(False)
        self._old_wakeup = signal.set_wakeup_fd(self._sender.fileno(), warn_on_full_buffer=False)
        for sig in _SIGNALS:
            self._previous[sig] = signal.signal(sig, _ignore)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def attach(self, loop: _Loop, on_signal: Callable[[signal.Signals], None]) -> None:
        """Hand each signal to `on_signal`, on `loop`, from now on."""
        self._loop, self._on_signal = loop, on_signal

    def detach(self) -> None:
        """The loop is gone: signals now only start the grace period."""
        self._loop = None

    def reporting(self) -> threading.Lock:
        """Held while the run writes its reports, so the watchdog never writes them at once."""
        return self._reporting

    def reports_written(self) -> None:
        """The run wrote its reports: after a signal, the watchdog only ends the process."""
        self._reports_written.set()

    def close(self) -> None:
        """Give the signals back: after a signal, ignored (the first one decided the exit code:
        GitHub's SIGTERM, 7.5 s after its SIGINT, must not cut the exit short); else as before."""
        if self._closed.is_set():
            return
        self._closed.set()
        for sig, previous in self._previous.items():
            signal.signal(sig, signal.SIG_IGN if self.received else previous)
        signal.set_wakeup_fd(self._old_wakeup)
        with contextlib.suppress(OSError):  # a full buffer: the thread has stopped reading
            self._sender.send(_STOP)
        self._thread.join()
        self._sender.close()
        self._receiver.close()

    def _watch(self) -> None:
        while True:
            data = self._receiver.recv(64)
            if not data or _STOP in data:
                return
            numbers = [n for n in data if n in {int(s) for s in _SIGNALS}]
            if numbers:
                self._received(signal.Signals(numbers[0]))
                return

    def _received(self, sig: signal.Signals) -> None:
        self.received = sig
        loop, on_signal = self._loop, self._on_signal
        if loop is not None and on_signal is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed in the meantime
                loop.call_soon_threadsafe(on_signal, sig)
        if self._closed.wait(self.grace_s):
            return
        code = self.codes[sig]
        if not self._reports_written.is_set() and self._reporting.acquire(timeout=self.grace_s):
            # The process must end all the same, whatever writing the reports raised.
            with contextlib.suppress(Exception):
                if not self._reports_written.is_set() and self.on_stuck is not None:
                    self.on_stuck(sig)
        if not self._closed.is_set():
            os._exit(code)
