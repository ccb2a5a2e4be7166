"""The provider seam: messages in, one streamed reply with its usage out (DESIGN section 6)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from runner.llm.native import NativeCall, NativeResult, NativeTools, calls_of, results_of
from runner.settings import ModelInfo, Settings

__all__ = [
    "LLM",
    "Message",
    "MessageChars",
    "NativeCall",
    "NativeResult",
    "NativeTools",
    "ProviderFactory",
    "Reply",
    "RetryEvent",
    "Usage",
    "capped",
    "reply_cap",
]

_REPLY_CAP: contextvars.ContextVar[int | None] = contextvars.ContextVar("reply_cap", default=None)


@contextlib.contextmanager
def reply_cap(tokens: int | None) -> Iterator[None]:
    """While inside, the model calls of this task ask for at most `tokens` output tokens: what
    its token limit leaves after the prompt (`runner.run.turn`). A context variable, so that
    concurrent tasks on one shared model instance each keep their own."""
    token = _REPLY_CAP.set(tokens)
    try:
        yield
    finally:
        _REPLY_CAP.reset(token)


def capped(max_output_tokens: int) -> int:
    """`max_output_tokens`, or less when the task's token limit leaves less (`reply_cap`)."""
    cap = _REPLY_CAP.get()
    return max_output_tokens if cap is None else max(1, min(max_output_tokens, cap))


@dataclass(frozen=True)
class Message:
    """One turn of the conversation; the first is a user message and roles alternate."""

    role: Literal["user", "assistant"]
    """Who said it."""
    content: str
    """What was said, as plain text (in xml mode tool calls and results are text too)."""
    calls: tuple[NativeCall, ...] = ()
    """Native mode: the assistant's tool calls, besides its text."""
    results: tuple[NativeResult, ...] = ()
    """Native mode: the results of the previous message's calls, before this message's text."""

    @property
    def chars(self) -> int:
        """Characters of everything the message sends: text, call arguments, results."""
        native = sum(len(c.arguments) + len(c.name) for c in self.calls)
        return len(self.content) + native + sum(len(r.content) for r in self.results)

    def record(self) -> dict[str, Any]:
        """The message as the session log stores it (native calls and results only if any)."""
        line: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.calls:
            line["tool_calls"] = [call.record() for call in self.calls]
        if self.results:
            line["tool_results"] = [result.record() for result in self.results]
        return line

    @classmethod
    def from_record(cls, record: Any) -> Message:
        """A message from its log record (`record()`'s shape; older logs hold role and content)."""
        role: Literal["user", "assistant"] = (
            "assistant" if record.get("role") == "assistant" else "user"
        )
        return cls(
            role,
            str(record.get("content", "")),
            calls_of(record.get("tool_calls")),
            results_of(record.get("tool_results")),
        )

    def plain(self) -> Message:
        """The message without its native results, their text folded into its own (for a
        result whose call is no longer in the context)."""
        if not self.results:
            return self
        texts = [
            f"[{r.name}] {'Error' if r.is_error else 'Result'}:\n{r.content}" for r in self.results
        ]
        return Message(self.role, "\n\n".join(filter(None, [*texts, self.content])), self.calls)

    @functools.cached_property
    def wire(self) -> dict[str, str]:
        """The message as both wire formats take it, built once: every request sends the whole
        history again. The SDKs copy a body before they change anything in it."""
        return {"role": self.role, "content": self.content}


class MessageChars:
    """A running count of a history's characters (`Message.chars`), for estimates made before
    every model call: the loop only appends between compactions, so each count adds only the
    messages that are new since the last one (a whole recount each turn is quadratic in a long
    session). A history that is not the one counted last, or whose counted part no longer ends
    with the same message, is counted afresh; `reset` forces that after an edit in place."""

    def __init__(self) -> None:
        self._counted: tuple[Sequence[Message], int, Message | None, int] | None = None
        """(history, how many of its messages were counted, the last of them, their characters)"""

    def count(self, messages: Sequence[Message]) -> int:
        """The characters of every message in `messages`."""
        counted = self._counted
        if (
            counted is not None
            and counted[0] is messages
            and 0 < counted[1] <= len(messages)
            and messages[counted[1] - 1] is counted[2]
        ):
            chars = counted[3] + sum(m.chars for m in messages[counted[1] :])
        else:
            chars = sum(m.chars for m in messages)
        self._counted = (messages, len(messages), messages[-1] if messages else None, chars)
        return chars

    def reset(self) -> None:
        """Count afresh next time (the history was changed in place, not appended to)."""
        self._counted = None


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
    calls: tuple[NativeCall, ...] = ()
    """Native mode: the tool calls of the reply, in order."""


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
        """Stream one reply to `messages` under `system`, retrying transient failures.

        A provider that supports native tool calls (`native_tools = True`) also takes
        `tools: NativeTools | None`; the loop passes it only to such a provider."""
        ...


ProviderFactory = Callable[[str, Settings], LLM]
"""What a provider module's `create` and an `agent_runner.providers` entry point load to."""
