"""What an MCP server says outside its answers, redacted before it is written anywhere.

A server's stderr goes to `<out>/mcp-logs/<task>/mcp/<server>.stderr.log`, inside the uploaded
artifact; a server given a token in its `envs` may print it there. The SDK logs what it cannot
parse (a stdout line that is not JSON-RPC, with the line in the message) to the runner's stderr.
Both go through the run's redactor: `StreamRedactor` masks a stream written in pieces, and
`guard_sdk_logging` masks every record of the SDK's loggers.
"""

from __future__ import annotations

import logging
import sys
from typing import ClassVar

from runner.redact import Redactor

__all__ = ["StreamRedactor", "guard_sdk_logging"]

_SDK_LOGGERS = ("mcp", "mcp_types")


class StreamRedactor:
    """Masks secrets in text that arrives in pieces, so that a secret split across two pieces
    is still masked: the end of each piece that could be the start of a secret is held back
    until the next piece (or `flush`)."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._secrets = redactor.secrets
        self._hold = max((len(s) for s in self._secrets), default=1) - 1
        self._pending = ""

    def feed(self, text: str) -> str:
        """The redacted text that can be written now."""
        if not self._secrets:
            return text
        buffer = self._pending + text
        cut = self._safe_cut(buffer)
        self._pending = buffer[cut:]
        return self._redactor.text(buffer[:cut])

    def flush(self) -> str:
        """Whatever is still held back, redacted."""
        rest, self._pending = self._pending, ""
        return self._redactor.text(rest)

    def _safe_cut(self, buffer: str) -> int:
        """Where to cut: before the last `hold` characters, and never inside a secret."""
        cut = max(len(buffer) - self._hold, 0)
        moved = True
        while moved and cut > 0:
            moved = False
            for secret in self._secrets:
                start = buffer.find(secret, max(cut - len(secret) + 1, 0), cut + len(secret) - 1)
                if start != -1 and start < cut:
                    cut, moved = start, True
        return cut


class _RedactingHandler(logging.Handler):
    """Writes SDK log records to the runner's stderr (as Python's last-resort handler would),
    with every secret masked, the traceback included."""

    redactor: ClassVar[Redactor] = Redactor()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            sys.stderr.write(type(self).redactor.text(text) + "\n")
            sys.stderr.flush()
        except Exception:  # a log line must never break a run
            self.handleError(record)


_HANDLER = _RedactingHandler(logging.WARNING)


def guard_sdk_logging(redactor: Redactor) -> None:
    """Route the SDK's log records through a handler that masks `redactor`'s secrets too (the
    secrets of every hub of the run add up: tasks run at once in one process)."""
    _RedactingHandler.redactor = _RedactingHandler.redactor.with_secrets(redactor.secrets)
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _HANDLER not in logger.handlers:
            logger.addHandler(_HANDLER)
        logger.propagate = False
