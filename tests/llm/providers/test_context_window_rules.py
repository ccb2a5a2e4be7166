"""The context window's rules, each pinned (runner.llm.providers.context_window): every key a
server may name the window by, the sizes refused, the reply limit's estimate term by term, and
which configured names count as the operator's word."""

from __future__ import annotations

import pytest

from runner.errors import ContextLengthError
from runner.llm.base import Message, Usage
from runner.llm.providers.context_window import (
    PROBE_MAX_BYTES,
    PROBE_TIMEOUT_S,
    ContextWindow,
    Planned,
    ServerFacts,
    context_window_of,
    min_reply_tokens,
    parse_models,
    parse_props,
    reply_limit,
)
from runner.settings import ModelInfo
from tests.fakes.llama_server import LlamaServer
from tests.fakes.model_server import Step

pytestmark = pytest.mark.anyio
TWO = [Message("user", "a"), Message("assistant", "b")]


@pytest.mark.parametrize("key", ["max_model_len", "context_length", "context_window"])
def test_each_key_a_server_may_name_the_window_by_is_read(key: str) -> None:
    assert parse_models({"data": [{"id": "m", key: 8192}]}) == {"m": 8192}


def test_the_first_key_listed_wins_when_an_entry_has_several() -> None:
    entry = {"id": "m", "context_window": 3, "context_length": 2, "max_model_len": 1}
    assert parse_models({"data": [entry]}) == {"m": 1}
    entry = {"id": "m", "context_window": 3, "context_length": 2}
    assert parse_models({"data": [entry]}) == {"m": 2}


@pytest.mark.parametrize("size", [0, -1, 100_000_000, True, False, 8.5, "8192", None])
def test_a_size_that_is_no_window_is_not_taken(size: object) -> None:
    assert parse_props({"n_ctx": size}) is None
    assert parse_models({"data": [{"id": "m", "max_model_len": size}]}) == {}


def test_the_largest_size_taken_is_just_under_the_bound() -> None:
    assert parse_props({"n_ctx": 99_999_999}) == 99_999_999
    assert parse_props({"n_ctx": 1}) == 1


def test_a_slot_size_that_is_no_window_falls_back_to_the_whole() -> None:
    assert parse_props({"default_generation_settings": {"n_ctx": 0}, "n_ctx": 8192}) == 8192
    assert parse_props({"default_generation_settings": [], "n_ctx": 8192}) == 8192


def test_the_only_entry_listed_is_taken_and_none_of_two_for_another_model() -> None:
    assert ServerFacts(models={"a": 7}).window("b") == 7
    assert ServerFacts(models={"a": 7, "c": 9}).window("b") is None
    assert ServerFacts(n_ctx=5, models={"b": 7}).window("b") == 5


def test_the_least_reply_is_a_sixteenth_of_the_window_at_least_256_at_most_the_maximum() -> None:
    assert min_reply_tokens(16_000, 10_000) == 1000
    assert min_reply_tokens(1000, 10_000) == 256
    assert min_reply_tokens(16_000, 500) == 500


def test_the_reply_limit_is_the_window_less_the_prompts_estimate_term_by_term() -> None:
    """16,003 characters: ceil(/4) = 4,001 tokens, + 4,001 // 16 = 250 for the template and the
    estimate's error, + 4 per message and one more = 12: a prompt of 4,263."""
    assert reply_limit(10_000, "", TWO, 8000, chars=16_003) == 10_000 - 4263
    assert reply_limit(10_000, "", TWO, 5000, chars=16_003) == 5000
    assert reply_limit(4263 + 625, "", TWO, 8000, chars=16_003) == 625  # exactly the least


def test_a_prompt_leaving_less_than_the_least_reply_is_refused_only_when_strict() -> None:
    """A window of 4,500: the least reply is 4,500 // 16 = 281, and 237 are left."""
    with pytest.raises(ContextLengthError) as refused:
        reply_limit(4500, "", TWO, 8000, chars=16_003)
    text = str(refused.value)
    assert "about 4263 tokens" in text and "leaves 237 of the 4500-token" in text
    assert "less than the 281 a reply needs" in text
    assert reply_limit(4500, "", TWO, 8000, chars=16_003, strict=False) == 281
    with pytest.raises(ContextLengthError, match="leaves 0 of the 4000-token"):
        reply_limit(4000, "", TWO, 8000, chars=16_003)


def test_the_characters_counted_are_the_system_prompt_and_every_message() -> None:
    system, messages = "s" * 3, [Message("user", "u" * 5000), Message("user", "v" * 8000)]
    counted = 3 + sum(m.chars for m in messages)
    assert reply_limit(10_000, system, messages, 9000) == reply_limit(
        10_000, "", TWO, 9000, chars=counted
    )


async def test_a_configured_name_covers_its_dated_versions_not_lookalikes() -> None:
    """`local` configured: `local` and `local-v2` take its window over the server's; `localx`
    is another model, whose window the server tells."""
    configured = {"local": ModelInfo(context_window=2000)}
    with LlamaServer(script=lambda body: Step(text="ok"), n_ctx=4096) as server:
        url = server.openai_base_url
        assert await ContextWindow("local", configured, url, None).get() == 2000
        assert await ContextWindow("local-v2", configured, url, None).get() == 2000
        assert await ContextWindow("localx", configured, url, None).get() == 4096


async def test_a_configured_window_is_strict_and_the_tables_is_not() -> None:
    big = [Message("user", "x" * 40_000)]
    tight = {"gpt-4.1": ModelInfo(context_window=4000)}
    with pytest.raises(ContextLengthError):
        await ContextWindow("gpt-4.1", tight, None, None).reply_limit("", big, 8000)
    # The table's window (1,047,576) is not strict: the least reply is asked for.
    table = ContextWindow("gpt-4.1", {}, None, None)
    huge = [Message("user", "x" * 4_400_000)]
    assert await table.reply_limit("", huge, 100_000) == 1_047_576 // 16


def test_the_probes_bounds_are_the_documented_ones() -> None:
    """docs/providers.md: both requests get 5 s together and read at most 4 MB each."""
    assert (PROBE_TIMEOUT_S, PROBE_MAX_BYTES) == (5.0, 4_000_000)


async def test_a_learned_window_counts_the_cached_prompt_too() -> None:
    window = ContextWindow("local-unknown", {}, None, None)
    planned = await window.plan("s", [Message("user", "x" * 4000)], 4096)
    usage = Usage(input_tokens=1000, cache_read_tokens=4000, output_tokens=3192)
    window.succeeded(planned, usage, "length")
    assert await window.get() == 1000 + 4000 + 3192


async def test_the_largest_success_is_remembered_not_the_last() -> None:
    window = ContextWindow("local-unknown", {}, None, None)
    big = await window.plan("s", [Message("user", "x" * 40_000)], 4096)
    small = await window.plan("s", [Message("user", "x" * 400)], 4096)
    window.succeeded(big, Usage(input_tokens=10_000, output_tokens=5), "stop")
    window.succeeded(small, Usage(input_tokens=100, output_tokens=5), "stop")
    middle = await window.plan("s", [Message("user", "x" * 20_000)], 4096)
    assert window.broken_stream(middle).kind == "broken_stream"  # smaller than a success


async def _overflow_after_a_success(window: ContextWindow, chars: int) -> int:
    """A success, then a reasonless end on a prompt of `chars`: that prompt's tokens."""
    first = await window.plan("s", [Message("user", "x" * 40)], 100)
    window.succeeded(first, Usage(input_tokens=10, output_tokens=5), "stop")
    large = await window.plan("s", [Message("user", "x" * chars)], 100)
    window.broken_stream(large)
    return large.prompt_tokens


async def test_an_overflow_guess_lowers_a_larger_window_but_never_a_configured_one() -> None:
    table = ContextWindow("gpt-4.1", {}, None, None)  # the table's 1,047,576
    tokens = await _overflow_after_a_success(table, 40_000)
    assert await table.get() == tokens
    configured = ContextWindow("local", {"local": ModelInfo(context_window=50_000)}, None, None)
    await _overflow_after_a_success(configured, 40_000)
    assert await configured.get() == 50_000


async def test_an_overflow_guess_never_raises_a_smaller_window() -> None:
    """A window learned at 8,000 tokens, then a reasonless end on a prompt of ~10,000: the
    window stays (a stream cut past it says nothing new)."""
    window = ContextWindow("local-unknown", {}, None, None)
    planned = await window.plan("s", [Message("user", "x" * 400)], 4096)
    window.succeeded(planned, Usage(input_tokens=4808, output_tokens=3192), "length")
    assert await window.get() == 8000
    # (A plan of it would be refused: the learned window is strict.)
    window.broken_stream(Planned(max_tokens=100, prompt_tokens=10_000))
    assert await window.get() == 8000


async def test_a_clamped_plan_counts_the_prompts_tokens_rounded_up() -> None:
    window = ContextWindow("local", {"local": ModelInfo(context_window=16_000)}, None, None)
    messages = [Message("user", "x" * 40_001)]
    planned = await window.plan("", messages, 8000)
    assert planned.prompt_tokens == -(-messages[0].chars // 4)
    assert planned.max_tokens < 8000


class _Asks:
    """An LLM whose provider asks its server for the window."""

    info = None

    async def context_window(self) -> int:
        return 1234


class _Table:
    info = ModelInfo(context_window=4321)


async def test_the_window_of_a_model_is_its_providers_answer_else_the_tables() -> None:
    assert await context_window_of(_Asks()) == 1234  # type: ignore[arg-type]
    assert await context_window_of(_Table()) == 4321  # type: ignore[arg-type]
