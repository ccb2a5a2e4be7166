"""Retry policy, SDK-free: what is retried, how long we wait, when we give up."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from runner.errors import ContextLengthError, ProviderError
from runner.llm.base import RetryEvent
from runner.llm.retry import (
    CallError,
    CallTarget,
    backoff_s,
    call_with_retries,
    is_context_length,
    parse_retry_after,
)
from runner.settings import RetrySettings
from tests.llm.conftest import SleepRecorder

TARGET = CallTarget("openai", "gpt-4.1", "http://127.0.0.1:9/v1", "OPENAI_API_KEY")


class Script:
    """A call that fails with the given errors, then returns "done"."""

    def __init__(self, *errors: CallError) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def status(code: int, message: str = "boom", **headers: str) -> CallError:
    return CallError("status", message, status=code, headers=headers)


def test_retry_after_ms_is_read_in_milliseconds() -> None:
    assert parse_retry_after({"Retry-After-Ms": "1500"}) == 1.5


def test_retry_after_is_read_in_seconds() -> None:
    assert parse_retry_after({"retry-after": "12"}) == 12.0


def test_retry_after_http_date_is_read_relative_to_now() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)

    waited = parse_retry_after({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, now=now)

    assert waited == 30.0


def test_unreadable_retry_after_is_ignored() -> None:
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    policy = RetrySettings(initial_backoff_s=1.0, max_backoff_s=8.0)
    rng = random.Random(7)

    waits = [backoff_s(attempt, policy, rng) for attempt in range(1, 7)]

    ceilings = [1, 2, 4, 8, 8, 8]
    assert all(c / 2 <= w <= c for w, c in zip(waits, ceilings, strict=True))


@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retryable(code: int) -> None:
    assert status(code).retryable


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retryable(code: int) -> None:
    assert not status(code).retryable


@pytest.mark.parametrize("kind", ["connection", "timeout", "idle", "broken_stream"])
def test_transport_failures_are_retryable(kind: str) -> None:
    assert CallError(kind, "x").retryable  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [
        CallError("status", "x", status=400, code="context_length_exceeded"),
        status(400, "This model's maximum context length is 8192 tokens."),
        status(400, "prompt is too long: 215089 tokens > 200000 maximum"),
    ],
)
def test_context_length_wordings_are_recognised(error: CallError) -> None:
    assert is_context_length(error)


@pytest.mark.anyio
async def test_each_retry_is_reported_before_its_wait(sleeps: SleepRecorder) -> None:
    events: list[RetryEvent] = []
    call = Script(status(503), CallError("idle", "stream idle for 1 s"))

    result, retries = await call_with_retries(
        call, target=TARGET, policy=RetrySettings(), on_retry=events.append, sleep=sleeps
    )

    assert (result, retries) == ("done", 2)
    assert [(e.attempt, e.status) for e in events] == [(1, 503), (2, None)]
    assert [e.wait_s for e in events] == sleeps.waits


@pytest.mark.anyio
async def test_giving_up_says_what_failed_and_how_often(sleeps: SleepRecorder) -> None:
    call = Script(*[status(502, "bad gateway")] * 5)

    with pytest.raises(ProviderError) as raised:
        await call_with_retries(
            call, target=TARGET, policy=RetrySettings(max_attempts=3), sleep=sleeps
        )

    assert str(raised.value).startswith(
        "openai model gpt-4.1 at http://127.0.0.1:9/v1 failed after 3 attempts:"
        " HTTP 502: bad gateway"
    )
    assert raised.value.exit_code == 4
    assert call.calls == 3


@pytest.mark.anyio
async def test_context_length_is_raised_without_retrying(sleeps: SleepRecorder) -> None:
    call = Script(CallError("status", "too long", status=400, code="context_length_exceeded"))

    with pytest.raises(ContextLengthError):
        await call_with_retries(call, target=TARGET, policy=RetrySettings(), sleep=sleeps)

    assert call.calls == 1
    assert sleeps.waits == []


@pytest.mark.anyio
async def test_refusal_without_a_key_variable_still_says_what_to_check(
    sleeps: SleepRecorder,
) -> None:
    keyless = CallTarget("openai", "llama", "http://127.0.0.1:8080/v1", None)

    with pytest.raises(ProviderError, match=r"refused the request \(401\): check its credentials"):
        await call_with_retries(
            Script(status(401)), target=keyless, policy=RetrySettings(), sleep=sleeps
        )


@pytest.mark.anyio
async def test_long_server_messages_are_shortened(sleeps: SleepRecorder) -> None:
    with pytest.raises(ProviderError) as raised:
        await call_with_retries(
            Script(status(400, "x" * 5000)), target=TARGET, policy=RetrySettings(), sleep=sleeps
        )

    assert len(str(raised.value)) < 500
