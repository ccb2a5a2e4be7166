"""The provider seam: messages in, one streamed reply with its usage out (DESIGN section 6)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from runner.settings import ModelInfo, Settings

__all__ = ["LLM", "Message", "ProviderFactory", "Reply", "RetryEvent", "Usage"]


@dataclass(frozen=True)
class Message:
    """One turn of the conversation; the first is a user message and roles alternate."""

    role: Literal["user", "assistant"]
    """Who said it."""
    content: str
    """What was said, as plain text (tool calls and results are text too)."""

    @functools.cached_property
    def wire(self) -> dict[str, str]:
        """The message as both wire formats take it, built once: every request sends the whole
        history again. The SDKs copy a body before they change anything in it."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Usage:
    """Tokens of one or more model calls.

    `input_tokens` counts only uncached prompt tokens, so the four counts never overlap and a
    cost is the sum of each count times its price.
    """

    input_tokens: int = 0
    """Prompt tokens neither read from nor written to the prompt cache."""
    output_tokens: int = 0
    """Tokens of the reply."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's prompt cache."""
    estimated: bool = False
    """True when the server reported no usage and the counts were estimated from text length."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            estimated=self.estimated or other.estimated,
        )

    @property
    def total(self) -> int:
        """All tokens: prompt (cached or not) and reply."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


@dataclass(frozen=True)
class Reply:
    """The outcome of one model call, retries included."""

    text: str
    """The assistant's text."""
    usage: Usage
    """Tokens of the successful attempt."""
    stop_reason: str
    """Why the model stopped, as the provider says it (`stop`, `end_turn`, `length`, ...)."""
    latency_s: float
    """Wall time of the whole call, retries and their waits included."""
    retries: int
    """Attempts that failed before the one that succeeded."""
    model: str
    """The model that answered, as the provider names it."""


@dataclass(frozen=True)
class RetryEvent:
    """One failed attempt that is about to be retried; written to the session log."""

    attempt: int
    """Number of the attempt that failed, from 1."""
    reason: str
    """What went wrong, e.g. `HTTP 429 rate limited` or `stream idle for 120 s`."""
    status: int | None
    """HTTP status of the failure, None for connection errors, timeouts and broken streams."""
    wait_s: float
    """Seconds waited before the next attempt."""


class LLM(Protocol):
    """A chat model behind one provider; the loop only ever sees this."""

    provider: str
    """Provider name as written in `PROVIDER:MODEL`."""
    model: str
    """Model name as the provider knows it."""
    info: ModelInfo | None
    """Context window and prices, None for a model missing from the table."""
    # An optional `shareable = True` says that tasks on the same model may share the instance
    # (`runner.run.app.prepare_jobs`); a provider without it gets one instance per task.

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> Reply:
        """Stream one reply to `messages` under `system`, retrying transient failures."""
        ...


ProviderFactory = Callable[[str, Settings], LLM]
"""What a provider module's `create` and an `agent_runner.providers` entry point load to."""
