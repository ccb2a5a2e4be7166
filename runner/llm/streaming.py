"""Helpers the streaming providers share: idle timeouts per chunk, and usage estimates."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from runner.llm.base import Message, Usage
from runner.llm.retry import CallError

__all__ = ["CHARS_PER_TOKEN", "IdleWatch", "estimate_tokens", "estimate_usage"]
CHARS_PER_TOKEN = 4


class IdleWatch:
    """One deadline for a whole streamed call, pushed back each time something arrives.

    `async with IdleWatch(idle_s, what) as watch:` around the request and the reading of its
    stream, with `watch.alive()` after the response and after each chunk: more than `idle_s` of
    silence becomes a retryable `CallError`. One timer for the call, moved along, costs less than
    a timeout per chunk.
    """

    def __init__(self, idle_s: float, what: str) -> None:
        self._idle_s = idle_s
        self._what = what
        self._answered = False
        self._timeout = asyncio.timeout(idle_s)
        self._now = asyncio.get_running_loop().time

    async def __aenter__(self) -> Self:
        await self._timeout.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._timeout.__aexit__(exc_type, exc, tb)
        except TimeoutError:
            if self._answered:
                raise CallError("idle", f"stream idle for {self._idle_s:g} s") from None
            raise CallError("idle", f"{self._what} sent nothing for {self._idle_s:g} s") from None

    def alive(self) -> None:
        """Something arrived: the silence starts again from now."""
        self._answered = True
        self._timeout.reschedule(self._now() + self._idle_s)


def estimate_tokens(text: str) -> int:
    """A rough token count for servers that report none (about four characters a token)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_usage(system: str, messages: Sequence[Message], reply: str) -> Usage:
    """Estimated usage of one call, flagged as estimated."""
    prompt = estimate_tokens(system) + sum(estimate_tokens(m.content) for m in messages)
    return Usage(input_tokens=prompt, output_tokens=estimate_tokens(reply), estimated=True)
