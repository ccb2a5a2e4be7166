"""What the SDK-backed providers share: the client built in the background, and retried calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from runner.llm.base import Message, Reply, RetryEvent, Usage
from runner.llm.inflight import CHARS_PER_TOKEN
from runner.llm.models import max_output_tokens_for
from runner.llm.native import NativeCall, NativeTools
from runner.llm.providers.limiter import gate_for, gated, governed
from runner.llm.providers.preload import Preload
from runner.llm.providers.streaming import Drains
from runner.llm.retry import CallTarget, Sleep, call_with_retries
from runner.settings import ModelInfo, Settings

__all__ = ["Attempt", "SdkProvider"]

ClientT = TypeVar("ClientT")
Attempt = tuple[str, Usage, str, str, tuple[NativeCall, ...]]
"""One successful attempt: text, usage, stop reason, the model that answered, native calls."""
CALLS_PER_CLIENT = 32
"""Concurrent calls one SDK client serves: its connection pool walks every connection at each
request's start and end (and probes each idle one's socket), so its cost per request grows with
the pool; a run with more tasks at once (`--jobs`) spreads its calls over more clients."""


class SdkProvider(Generic[ClientT]):
    """A provider whose SDK client is built by `preload` and whose calls go through the retry
    policy; subclasses implement `_attempt` (one streamed call, SDK errors turned into
    `runner.llm.retry.CallError`)."""

    provider: str
    model: str
    info: ModelInfo | None
    native_tools = True
    """The provider takes `tools=` (native tool calls, DESIGN section 16)."""
    shareable = True
    """Tasks on the same model may share one instance: a call keeps no state between calls, and
    the client is safe to use from concurrent tasks of one event loop."""

    def __init__(
        self,
        *,
        settings: Settings,
        target: CallTarget,
        sleep: Sleep,
        build: Callable[[], ClientT],
    ) -> None:
        self._settings = settings
        self._target = target
        self._sleep = sleep
        count = -(-settings.jobs // CALLS_PER_CLIENT)
        self._preload = Preload(
            lambda: [build() for _ in range(count)], name=f"{self.provider}-client"
        )
        self._turn = 0
        self._drains = Drains()
        """Finished streams whose body's end is still being read (see `Drains`)."""

    @property
    def _client(self) -> ClientT:
        """The client for the next call (taken in turn when there are several)."""
        clients = self._preload.get()
        self._turn += 1
        return clients[self._turn % len(clients)]

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        tools: NativeTools | None = None,
    ) -> Reply:
        """Stream one reply; see `runner.llm.base.LLM`."""
        started = time.monotonic()
        await self._drains.settle()  # the last reply's connection back in the pool, if it can be
        chars = len(system) + sum(message.chars for message in messages)
        tokens = chars // CHARS_PER_TOKEN + max_output_tokens_for(self.model, self._settings)
        (text, usage, stop_reason, model, calls), retries = await call_with_retries(
            # Through the run's rate gate for this provider and server, and the fleet's
            # governor when shards share one (`limiter`).
            gated(
                governed(
                    lambda: self._attempt(system, messages, tools),
                    self._target,
                    tokens,
                    lambda attempt: attempt[1].total,
                    self._settings.retry,
                ),
                gate_for(self._target, self._settings.retry),
                self._sleep,
            ),
            target=self._target,
            policy=self._settings.retry,
            on_retry=on_retry,
            sleep=self._sleep,
        )
        latency = time.monotonic() - started
        return Reply(text, usage, stop_reason, latency, retries, model, calls)

    async def aclose(self) -> None:
        """Finish the background drains, then close the HTTP connections."""
        await self._drains.wait()
        clients: list[Any] = self._preload.get()
        for client in clients:
            await client.close()

    async def _attempt(
        self, system: str, messages: Sequence[Message], tools: NativeTools | None = None
    ) -> Attempt:
        raise NotImplementedError
