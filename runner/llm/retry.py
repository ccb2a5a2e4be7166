"""Retries of model calls with tenacity; the SDKs' own retries are off (DESIGN section 6).

Provider modules translate their SDK's exceptions into `CallError` (status, headers, message), so
this module classifies failures without knowing any SDK.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Literal, TypeVar

from runner.errors import ContextLengthError, ProviderError
from runner.llm.base import RetryEvent
from runner.settings import RetrySettings

if TYPE_CHECKING:
    from tenacity import RetryCallState

__all__ = [
    "RETRYABLE_STATUS",
    "CallError",
    "CallTarget",
    "Sleep",
    "backoff_s",
    "call_with_retries",
    "is_context_length",
    "parse_retry_after",
    "stream_error",
]

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_CONTEXT_WORDING = re.compile(
    r"maximum context length|context length|context_length_exceeded|prompt is too long"
    r"|too many tokens|exceeds the context window|available context size|exceed_context_size",
    re.IGNORECASE,
)
_MESSAGE_CAP = 300

CallErrorKind = Literal["status", "connection", "timeout", "idle", "broken_stream"]


class CallError(Exception):
    """A failed attempt, in terms every provider can express."""

    def __init__(
        self,
        kind: CallErrorKind,
        message: str,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: CallErrorKind = kind
        """`status` for an HTTP error response; otherwise what broke on the way."""
        self.message = message
        """The server's own error message, or a description of the failure."""
        self.status = status
        """HTTP status, for `status` errors."""
        self.headers = {key.lower(): value for key, value in (headers or {}).items()}
        """Response headers, lower-cased names (for `retry-after`)."""
        self.code = code
        """Machine-readable error code from the body, e.g. `context_length_exceeded`."""

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed."""
        if self.kind != "status":
            return True
        return self.status is not None and (self.status in RETRYABLE_STATUS or self.status >= 500)

    def reason(self) -> str:
        """A short description for retry events and error messages."""
        if self.kind == "status":
            return f"HTTP {self.status}: {_short(self.message)}"
        return _short(self.message)


@dataclass(frozen=True)
class CallTarget:
    """What a call went to, for error messages that say what to fix."""

    provider: str
    """Provider name, e.g. `openai`."""
    model: str
    """Model name as sent."""
    base_url: str
    """Server the call went to."""
    key_env: str | None
    """Environment variable holding the key, None when the provider needs none."""


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds a server asked to wait: `retry-after-ms`, or `retry-after` (seconds or a date)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    when: datetime
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_s(attempt: int, policy: RetrySettings, rng: random.Random | None = None) -> float:
    """Exponential backoff after failed attempt `attempt` (from 1), with equal jitter."""
    ceiling = min(policy.max_backoff_s, policy.initial_backoff_s * 2.0 ** min(attempt - 1, 60))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def is_context_length(error: CallError) -> bool:
    """Whether a 400 says the prompt does not fit the model's context window."""
    if error.kind != "status" or error.status not in (400, 413):
        return False
    return error.code == "context_length_exceeded" or bool(_CONTEXT_WORDING.search(error.message))


def stream_error(message: str) -> CallError:
    """An error event inside a 200 stream: a broken stream, retried whole, unless it says the
    prompt does not fit (llama.cpp streams `exceed_context_size_error` so): that is a
    context-length error, for compaction, not six more attempts of the same prompt."""
    if _CONTEXT_WORDING.search(message):
        return CallError("status", message, status=400, code="context_length_exceeded")
    return CallError("broken_stream", f"stream error: {message}")


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    target: CallTarget,
    policy: RetrySettings,
    on_retry: Callable[[RetryEvent], None] | None = None,
    sleep: Sleep = asyncio.sleep,
) -> tuple[T, int]:
    """Run `call` until it succeeds; return its result and the number of failed attempts.

    Raises `ContextLengthError` for a prompt that is too long, and `ProviderError` for a failure
    that retrying cannot fix or once the attempts or total wait run out.
    """

    def wait(state: RetryCallState) -> float:
        error = _error_of(state)
        asked = parse_retry_after(error.headers) if error is not None else None
        if asked is not None:
            return min(asked, policy.retry_after_cap_s)
        return backoff_s(state.attempt_number, policy)

    def stop(state: RetryCallState) -> bool:
        return (
            state.attempt_number >= policy.max_attempts
            or state.idle_for + state.upcoming_sleep > policy.max_total_wait_s
        )

    def notify(state: RetryCallState) -> None:
        error = _error_of(state)
        if on_retry is not None and error is not None:
            event = RetryEvent(
                state.attempt_number, error.reason(), error.status, state.upcoming_sleep
            )
            on_retry(event)

    # Nearly every call succeeds at once: the first attempt is made without tenacity's machinery
    # (a tenth of a millisecond a call). A failure is then replayed as tenacity's own first attempt,
    # so that waits, stops and notices count it exactly as they would have.
    try:
        return await call(), 0
    except CallError as error:
        if not error.retryable:
            raise _operator_error(error, target, 1) from None
        first_failure: CallError | None = error

    async def replay_then_call() -> T:
        nonlocal first_failure
        if first_failure is not None:
            failure, first_failure = first_failure, None
            raise failure
        return await call()

    from tenacity import AsyncRetrying, retry_if_exception  # only once a call has failed

    retrying = AsyncRetrying(
        sleep=sleep,
        stop=stop,
        wait=wait,
        retry=retry_if_exception(lambda exc: isinstance(exc, CallError) and exc.retryable),
        before_sleep=notify,
        reraise=True,
    )
    attempts = 0
    try:
        async for attempt in retrying:
            attempts = attempt.retry_state.attempt_number
            with attempt:
                result = await replay_then_call()
    except CallError as error:
        raise _operator_error(error, target, attempts) from None
    return result, attempts - 1


def _error_of(state: RetryCallState) -> CallError | None:
    error = state.outcome.exception() if state.outcome is not None else None
    return error if isinstance(error, CallError) else None


def _operator_error(error: CallError, target: CallTarget, attempts: int) -> ProviderError:
    where = target.base_url
    if error.retryable:
        plural = "attempt" if attempts == 1 else "attempts"
        return ProviderError(
            f"{target.provider} model {target.model} at {where} failed after {attempts} {plural}:"
            f" {error.reason()} (check the server, or raise retry.max_attempts /"
            " retry.max_total_wait_s)"
        )
    status = error.status
    if is_context_length(error):
        return ContextLengthError(
            f"prompt too long for {target.model} at {where} ({status}): {_short(error.message)}"
        )
    if status in (401, 403):
        # The server's wording is left out: it may quote part of the key.
        if target.key_env is None:
            return ProviderError(f"{where} refused the request ({status}): check its credentials")
        verb = "check the key" if status == 401 else "check the key's permissions for this model"
        return ProviderError(f"{target.key_env} was refused by {where} ({status}): {verb}")
    if status == 404:
        return ProviderError(
            f"model {target.model} not found at {where} (404): check the model name and base URL"
            f" ({_short(error.message)})"
        )
    return ProviderError(
        f"{target.provider} at {where} rejected the request ({status}): {_short(error.message)}"
    )


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CAP else text[: _MESSAGE_CAP - 3] + "..."
