"""Helpers the streaming providers share: idle timeouts per chunk, and usage estimates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import TypeVar

from runner.llm.base import Message, Usage
from runner.llm.retry import CallError

__all__ = ["CHARS_PER_TOKEN", "estimate_tokens", "estimate_usage", "idle_chunks", "within_idle"]

T = TypeVar("T")
CHARS_PER_TOKEN = 4


async def within_idle(awaitable: Awaitable[T], idle_s: float, what: str) -> T:
    """Await `awaitable`, turning more than `idle_s` of silence into a retryable `CallError`."""
    try:
        async with asyncio.timeout(idle_s):
            return await awaitable
    except TimeoutError:
        raise CallError("idle", f"{what} sent nothing for {idle_s:g} s") from None


async def idle_chunks(stream: AsyncIterator[T], idle_s: float) -> AsyncIterator[T]:
    """Yield `stream`'s items, cutting the stream when one takes longer than `idle_s` to arrive."""
    while True:
        try:
            async with asyncio.timeout(idle_s):
                item = await anext(stream)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise CallError("idle", f"stream idle for {idle_s:g} s") from None
        yield item


def estimate_tokens(text: str) -> int:
    """A rough token count for servers that report none (about four characters a token)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_usage(system: str, messages: Sequence[Message], reply: str) -> Usage:
    """Estimated usage of one call, flagged as estimated."""
    prompt = estimate_tokens(system) + sum(estimate_tokens(m.content) for m in messages)
    return Usage(input_tokens=prompt, output_tokens=estimate_tokens(reply), estimated=True)
