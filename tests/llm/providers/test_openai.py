"""The openai provider against a fake OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from runner.errors import ConfigError, ContextLengthError, ProviderError
from runner.llm.base import Message, RetryEvent
from runner.llm.providers.openai import OpenAIChat
from runner.settings import RetrySettings
from tests.fakes.model_server import FakeModelServer, fault, reply
from tests.llm.conftest import SleepRecorder, make_settings

pytestmark = pytest.mark.anyio

HELLO = [Message("user", "Say hello.")]


@pytest.fixture
async def llm(server: FakeModelServer, sleeps: SleepRecorder) -> AsyncIterator[OpenAIChat]:
    chat = OpenAIChat("gpt-4.1", make_settings(server), sleep=sleeps)
    yield chat
    await chat.aclose()


async def test_streamed_text_and_usage_are_returned(
    server: FakeModelServer, llm: OpenAIChat
) -> None:
    server.push(reply("Hello there, friend.", input_tokens=30, output_tokens=5, chunks=4))

    result = await llm.complete("You are terse.", HELLO)

    assert result.text == "Hello there, friend."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 5)
    assert not result.usage.estimated
    assert result.stop_reason == "stop"
    assert result.retries == 0
    assert result.model == "gpt-4.1"


async def test_request_carries_system_message_stream_options_and_limits(
    server: FakeModelServer, sleeps: SleepRecorder
) -> None:
    server.push(reply("ok"))
    chat = OpenAIChat("gpt-4.1", make_settings(server, temperature=0.2), sleep=sleeps)

    await chat.complete("SYSTEM", [Message("user", "a"), Message("assistant", "b"), *HELLO])
    await chat.aclose()

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-openai"
    assert request.body["messages"][0] == {"role": "system", "content": "SYSTEM"}
    assert [m["role"] for m in request.body["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["max_tokens"] == 8192
    assert request.body["temperature"] == 0.2
    assert request.headers["x-stainless-retry-count"] == "0"


async def test_reasoning_models_get_max_completion_tokens(
    server: FakeModelServer, sleeps: SleepRecorder
) -> None:
    server.push(reply("ok"))
    chat = OpenAIChat("o4-mini", make_settings(server), sleep=sleeps)

    await chat.complete("s", HELLO)
    await chat.aclose()

    body = server.requests[0].body
    assert body["max_completion_tokens"] == 8192
    assert "max_tokens" not in body


async def test_cached_prompt_tokens_are_split_from_input(
    server: FakeModelServer, llm: OpenAIChat
) -> None:
    server.push(reply("ok", input_tokens=100, cache_read_tokens=900, output_tokens=2))

    usage = (await llm.complete("s", HELLO)).usage

    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (100, 900, 2)


async def test_stream_without_usage_gets_estimated_usage(
    server: FakeModelServer, llm: OpenAIChat
) -> None:
    server.push(reply("x" * 40, fault="no_usage"))

    result = await llm.complete("s" * 400, HELLO)

    assert result.text == "x" * 40
    assert result.usage.estimated
    assert result.usage.output_tokens == 10
    assert result.usage.input_tokens >= 100


async def test_finish_reason_becomes_stop_reason(server: FakeModelServer, llm: OpenAIChat) -> None:
    server.push(reply("trunc", stop_reason="length"))

    assert (await llm.complete("s", HELLO)).stop_reason == "length"


@pytest.mark.parametrize(
    ("step", "status"),
    [
        (fault("rate_limit"), 429),
        (fault("server_error"), 500),
        (fault("unavailable"), 503),
        (fault("overloaded"), 529),
        (fault("http_error", status=408), 408),
        (fault("http_error", status=409), 409),
        (fault("http_error", status=502), 502),
        (fault("http_error", status=504), 504),
    ],
)
async def test_retryable_status_is_retried_and_reported(
    server: FakeModelServer, llm: OpenAIChat, sleeps: SleepRecorder, step: object, status: int
) -> None:
    server.push(step, reply("recovered"))  # type: ignore[arg-type]
    events: list[RetryEvent] = []

    result = await llm.complete("s", HELLO, on_retry=events.append)

    assert result.text == "recovered"
    assert result.retries == 1
    assert [(e.attempt, e.status) for e in events] == [(1, status)]
    assert len(sleeps.waits) == 1
    assert 0.5 <= sleeps.waits[0] <= 1.0  # first backoff: initial 1 s with equal jitter


async def test_retry_after_seconds_is_honoured(
    server: FakeModelServer, llm: OpenAIChat, sleeps: SleepRecorder
) -> None:
    server.push(fault("rate_limit", retry_after="7"), reply("ok"))
    events: list[RetryEvent] = []

    await llm.complete("s", HELLO, on_retry=events.append)

    assert sleeps.waits == [7.0]
    assert events[0].wait_s == 7.0
    assert "429" in events[0].reason


async def test_retry_after_ms_wins_over_retry_after(
    server: FakeModelServer, llm: OpenAIChat, sleeps: SleepRecorder
) -> None:
    server.push(fault("rate_limit", retry_after="7", retry_after_ms="250"), reply("ok"))

    await llm.complete("s", HELLO)

    assert sleeps.waits == [0.25]


async def test_retry_after_is_capped(server: FakeModelServer, sleeps: SleepRecorder) -> None:
    retry = RetrySettings(max_attempts=3, retry_after_cap_s=5.0)
    chat = OpenAIChat("gpt-4.1", make_settings(server, retry=retry), sleep=sleeps)
    server.push(fault("rate_limit", retry_after="3600"), reply("ok"))

    await chat.complete("s", HELLO)
    await chat.aclose()

    assert sleeps.waits == [5.0]


async def test_cut_stream_is_retried_as_a_whole_call(
    server: FakeModelServer, llm: OpenAIChat
) -> None:
    server.push(reply("partial answer", fault="cut"), reply("whole answer"))
    events: list[RetryEvent] = []

    result = await llm.complete("s", HELLO, on_retry=events.append)

    assert result.text == "whole answer"
    assert result.retries == 1
    assert events[0].status is None
    assert "finish_reason" in events[0].reason
    assert len(server.requests) == 2


async def test_dropped_connection_is_retried(server: FakeModelServer, llm: OpenAIChat) -> None:
    server.push(reply("partial answer", fault="drop"), reply("whole answer"))

    result = await llm.complete("s", HELLO)

    assert (result.text, result.retries) == ("whole answer", 1)


async def test_error_event_inside_stream_is_retried(
    server: FakeModelServer, llm: OpenAIChat
) -> None:
    server.push(reply("partial", fault="stream_error"), reply("whole"))

    assert (await llm.complete("s", HELLO)).text == "whole"


async def test_stalled_stream_is_cut_by_the_idle_timeout_and_retried(
    server: FakeModelServer, sleeps: SleepRecorder
) -> None:
    retry = RetrySettings(max_attempts=2, idle_timeout_s=0.3)
    chat = OpenAIChat("gpt-4.1", make_settings(server, retry=retry), sleep=sleeps)
    server.push(reply("never finished", fault="stall"), reply("after the stall"))
    events: list[RetryEvent] = []

    result = await chat.complete("s", HELLO, on_retry=events.append)
    await chat.aclose()

    assert result.text == "after the stall"
    assert server.wait_for_stall(timeout=0)
    assert "idle for 0.3 s" in events[0].reason


async def test_unreachable_server_fails_after_max_attempts(sleeps: SleepRecorder) -> None:
    with FakeModelServer() as gone:
        url = gone.openai_base_url
    settings = make_settings(
        openai_api_key="k", openai_base_url=url, retry=RetrySettings(max_attempts=3)
    )
    chat = OpenAIChat("gpt-4.1", settings, sleep=sleeps)

    with pytest.raises(ProviderError, match="failed after 3 attempts: connection failed"):
        await chat.complete("s", HELLO)
    await chat.aclose()
    assert len(sleeps.waits) == 2


async def test_retries_stop_when_total_wait_would_pass_its_cap(
    server: FakeModelServer, sleeps: SleepRecorder
) -> None:
    retry = RetrySettings(max_attempts=10, max_total_wait_s=10.0)
    chat = OpenAIChat("gpt-4.1", make_settings(server, retry=retry), sleep=sleeps)
    server.push(*[fault("rate_limit", retry_after="4")] * 5)

    with pytest.raises(ProviderError, match="failed after 3 attempts: HTTP 429"):
        await chat.complete("s", HELLO)
    await chat.aclose()
    assert sleeps.waits == [4.0, 4.0]


async def test_refused_key_fails_fast_naming_the_variable(
    server: FakeModelServer, llm: OpenAIChat, sleeps: SleepRecorder
) -> None:
    server.push(fault("unauthorized"))

    with pytest.raises(ProviderError) as raised:
        await llm.complete("s", HELLO)

    message = str(raised.value)
    assert message == (
        f"OPENAI_API_KEY was refused by {server.openai_base_url} (401): check the key"
    )
    assert "sk-" not in message
    assert raised.value.exit_code == 4
    assert sleeps.waits == []


async def test_forbidden_fails_fast(server: FakeModelServer, llm: OpenAIChat) -> None:
    server.push(fault("http_error", status=403))

    with pytest.raises(ProviderError, match=r"OPENAI_API_KEY was refused by .* \(403\)"):
        await llm.complete("s", HELLO)
    assert len(server.requests) == 1


async def test_unknown_model_fails_fast_with_model_and_url(
    server: FakeModelServer, sleeps: SleepRecorder
) -> None:
    server.push(fault("model_not_found"))
    chat = OpenAIChat("gpt-nope", make_settings(server), sleep=sleeps)

    with pytest.raises(ProviderError) as raised:
        await chat.complete("s", HELLO)
    await chat.aclose()

    assert str(raised.value).startswith(
        f"model gpt-nope not found at {server.openai_base_url} (404)"
    )
    assert sleeps.waits == []


async def test_context_length_error_is_its_own_type(
    server: FakeModelServer, llm: OpenAIChat
) -> None:
    server.push(fault("context_length"))

    with pytest.raises(ContextLengthError, match="maximum context length is 128000"):
        await llm.complete("s", HELLO)
    assert len(server.requests) == 1


async def test_bad_request_fails_fast_with_the_server_message(
    server: FakeModelServer, llm: OpenAIChat
) -> None:
    server.push(fault("http_error", status=400))

    with pytest.raises(ProviderError, match=r"rejected the request \(400\): fake failure 400"):
        await llm.complete("s", HELLO)


async def test_local_server_works_without_a_key(server: FakeModelServer) -> None:
    server.push(reply("local"))
    settings = make_settings(openai_base_url=server.openai_base_url)
    chat = OpenAIChat("llama-3.1-8b", settings)

    assert (await chat.complete("s", HELLO)).text == "local"
    await chat.aclose()
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_missing_key_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        OpenAIChat("gpt-4.1", make_settings())


def test_known_model_carries_its_table_entry(server: FakeModelServer) -> None:
    chat = OpenAIChat("gpt-4.1-2025-04-14", make_settings(server))

    assert chat.info is not None
    assert chat.info.context_window == 1_047_576
