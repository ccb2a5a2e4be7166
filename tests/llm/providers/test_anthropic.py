"""The anthropic provider against a fake Messages server, through the real SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from runner.errors import ConfigError, ContextLengthError, ProviderError
from runner.llm.base import Message, RetryEvent
from runner.llm.providers.anthropic import AnthropicMessages
from runner.settings import RetrySettings
from tests.fakes.model_server import FakeModelServer, Step, fault, reply
from tests.llm.conftest import SleepRecorder, make_settings

pytestmark = [
    pytest.mark.anyio,
    # The SDK warns about models nearing end of life; the names here are just test data.
    pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning"),
]

HELLO = [Message("user", "Say hello.")]


@pytest.fixture
async def llm(server: FakeModelServer, sleeps: SleepRecorder) -> AsyncIterator[AnthropicMessages]:
    claude = AnthropicMessages("claude-sonnet-4-5", make_settings(server), sleep=sleeps)
    yield claude
    await claude.aclose()


async def test_streamed_text_and_usage_are_returned(
    server: FakeModelServer, llm: AnthropicMessages
) -> None:
    server.push(reply("Hello from Claude.", input_tokens=40, output_tokens=6, chunks=5))

    result = await llm.complete("Be brief.", HELLO)

    assert result.text == "Hello from Claude."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 6)
    assert not result.usage.estimated
    assert result.stop_reason == "end_turn"
    assert result.retries == 0
    assert result.model == "claude-sonnet-4-5"


async def test_system_prompt_is_sent_as_a_cached_block(
    server: FakeModelServer, llm: AnthropicMessages
) -> None:
    server.push(reply("ok"))

    await llm.complete("SYSTEM", [Message("user", "a"), Message("assistant", "b"), *HELLO])

    (request,) = server.requests
    assert request.path == "/v1/messages"
    # SDK 2.x sends the key as a bearer token; 0.x sent x-api-key.
    sent = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent.removeprefix("Bearer ") == "sk-ant-test"
    assert request.body["system"] == [
        {"type": "text", "text": "SYSTEM", "cache_control": {"type": "ephemeral"}}
    ]
    assert [m["role"] for m in request.body["messages"]] == ["user", "assistant", "user"]
    assert request.body["stream"] is True
    assert request.body["max_tokens"] == 8192


async def test_temperature_goes_in_the_body(server: FakeModelServer) -> None:
    server.push(reply("ok"))
    claude = AnthropicMessages("claude-haiku-4-5", make_settings(server, temperature=0.0))

    await claude.complete("s", HELLO)
    await claude.aclose()

    assert server.requests[0].body["temperature"] == 0.0


async def test_cache_reads_and_writes_are_reported(
    server: FakeModelServer, llm: AnthropicMessages
) -> None:
    server.push(reply("ok", input_tokens=5, cache_read_tokens=1200, cache_write_tokens=300))

    usage = (await llm.complete("s", HELLO)).usage

    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (5, 1200, 300)


async def test_stream_without_usage_gets_estimated_usage(
    server: FakeModelServer, llm: AnthropicMessages
) -> None:
    server.push(reply("y" * 20, fault="no_usage"))

    usage = (await llm.complete("s", HELLO)).usage

    assert usage.estimated
    assert usage.output_tokens == 5


@pytest.mark.parametrize(
    ("step", "status"),
    [
        (fault("overloaded"), 529),
        (fault("rate_limit"), 429),
        (fault("server_error"), 500),
        (fault("unavailable"), 503),
        (reply("partial", fault="stream_error"), 529),
    ],
)
async def test_retryable_failure_is_retried_and_reported(
    server: FakeModelServer,
    llm: AnthropicMessages,
    sleeps: SleepRecorder,
    step: Step,
    status: int,
) -> None:
    server.push(step, reply("recovered"))
    events: list[RetryEvent] = []

    result = await llm.complete("s", HELLO, on_retry=events.append)

    assert (result.text, result.retries) == ("recovered", 1)
    assert [e.status for e in events] == [status]
    assert len(sleeps.waits) == 1


async def test_retry_after_is_honoured(
    server: FakeModelServer, llm: AnthropicMessages, sleeps: SleepRecorder
) -> None:
    server.push(fault("overloaded", retry_after="3"), reply("ok"))

    await llm.complete("s", HELLO)

    assert sleeps.waits == [3.0]


async def test_stream_without_message_stop_is_retried(
    server: FakeModelServer, llm: AnthropicMessages
) -> None:
    server.push(reply("half", fault="cut"), reply("whole"))
    events: list[RetryEvent] = []

    result = await llm.complete("s", HELLO, on_retry=events.append)

    assert result.text == "whole"
    assert "message_stop" in events[0].reason


async def test_dropped_connection_is_retried(
    server: FakeModelServer, llm: AnthropicMessages
) -> None:
    server.push(reply("half", fault="drop"), reply("whole"))

    assert (await llm.complete("s", HELLO)).text == "whole"


async def test_stalled_stream_is_cut_by_the_idle_timeout(server: FakeModelServer) -> None:
    retry = RetrySettings(max_attempts=1, idle_timeout_s=0.3)
    claude = AnthropicMessages("claude-sonnet-4-5", make_settings(server, retry=retry))
    server.push(reply("never", fault="stall"))

    with pytest.raises(ProviderError, match=r"failed after 1 attempt: stream idle for 0\.3 s"):
        await claude.complete("s", HELLO)
    await claude.aclose()


async def test_context_too_long_is_a_context_length_error(
    server: FakeModelServer, llm: AnthropicMessages
) -> None:
    server.push(fault("context_length"))

    with pytest.raises(ContextLengthError, match="prompt is too long"):
        await llm.complete("s", HELLO)


async def test_refused_key_fails_fast(server: FakeModelServer, llm: AnthropicMessages) -> None:
    server.push(fault("unauthorized"))

    with pytest.raises(ProviderError, match=r"^ANTHROPIC_API_KEY was refused by .* \(401\)"):
        await llm.complete("s", HELLO)
    assert len(server.requests) == 1


async def test_unknown_model_fails_fast(server: FakeModelServer, sleeps: SleepRecorder) -> None:
    server.push(fault("model_not_found"))
    claude = AnthropicMessages("claude-nope", make_settings(server), sleep=sleeps)

    with pytest.raises(ProviderError, match=r"^model claude-nope not found at .* \(404\)"):
        await claude.complete("s", HELLO)
    await claude.aclose()
    assert sleeps.waits == []


def test_missing_key_is_a_config_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        AnthropicMessages("claude-sonnet-4-5", make_settings())


def test_dated_model_name_finds_its_prices(server: FakeModelServer) -> None:
    claude = AnthropicMessages("claude-sonnet-4-5-20250929", make_settings(server))

    assert claude.info is not None
    assert claude.info.cache_write_usd_per_mtok == 3.75
