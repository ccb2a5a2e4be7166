"""Context windows of local servers: what the server says, what config says, the reply limit."""

from __future__ import annotations

import pytest

from runner.errors import ContextLengthError
from runner.llm.base import Message, MessageChars, Usage
from runner.llm.models import UNKNOWN_MODEL_MAX_OUTPUT, max_output_tokens_for
from runner.llm.providers.context_window import (
    ContextWindow,
    ServerFacts,
    min_reply_tokens,
    parse_models,
    parse_props,
    reply_limit,
)
from runner.llm.retry import is_context_length, stream_error
from runner.settings import ModelInfo, Settings
from tests.fakes.llama_server import LlamaServer
from tests.fakes.model_server import Step

pytestmark = pytest.mark.anyio


def test_props_gives_the_context_per_slot_before_the_whole() -> None:
    assert parse_props({"default_generation_settings": {"n_ctx": 4096}, "n_ctx": 16384}) == 4096
    assert parse_props({"n_ctx": 16384}) == 16384
    assert parse_props({"default_generation_settings": {"n_ctx": "8k"}}) is None
    assert parse_props({"n_ctx": True}) is None
    assert parse_props(["n_ctx", 8192]) is None
    assert parse_props({"n_ctx": 0}) is None


def test_models_gives_each_listed_models_length() -> None:
    payload = {
        "data": [
            {"id": "meta-llama/Llama-3.1-8B", "max_model_len": 8192},
            {"id": "router/model", "context_length": 32768},
            {"id": "other", "context_window": 4096},
            {"id": "bare"},
            {"max_model_len": 1},
            "junk",
        ]
    }
    assert parse_models(payload) == {
        "meta-llama/Llama-3.1-8B": 8192,
        "router/model": 32768,
        "other": 4096,
    }
    assert parse_models({"data": "nope"}) == {}
    assert parse_models(None) == {}


def test_server_facts_pick_the_models_entry_or_the_only_one() -> None:
    assert ServerFacts(n_ctx=2048, models={"m": 9}).window("m") == 2048
    assert ServerFacts(models={"a": 1000, "b": 2000}).window("b") == 2000
    assert ServerFacts(models={"a": 1000, "b": 2000}).window("c") is None
    assert ServerFacts(models={"a": 1000}).window("c") == 1000
    assert ServerFacts().window("c") is None


def test_max_tokens_is_clamped_so_prompt_and_reply_fit() -> None:
    messages = [Message("user", "x" * 4000)]  # about 1,000 tokens
    limit = reply_limit(8192, "s" * 400, messages, 8192)
    assert 6000 < limit < 8192 - 1100
    assert reply_limit(None, "s", messages, 8192) == 8192
    assert reply_limit(1_000_000, "s", messages, 8192) == 8192


def test_no_room_for_the_least_reply_is_a_context_length_error_before_sending() -> None:
    messages = [Message("user", "x" * 4 * 7800)]
    assert min_reply_tokens(8192, 8192) == 512
    with pytest.raises(ContextLengthError, match="8192-token context window"):
        reply_limit(8192, "", messages, 8192)
    # A hosted model's window from the table: the server, which counts better, decides.
    assert reply_limit(8192, "", messages, 8192, strict=False) == 512


def test_a_prompt_at_the_compaction_threshold_still_leaves_the_least_reply() -> None:
    # Compaction keeps the estimate under 80 % of the window; a reply must still fit then.
    window = 8192
    messages = [Message("user", "x" * 4 * 100)] * 60 + [Message("user", "x" * 4 * 550)]
    assert sum(len(m.content) for m in messages) // 4 <= 0.8 * window
    assert reply_limit(window, "", messages, 8192) >= min_reply_tokens(window, 8192)


def test_llama_cpps_overflow_wording_is_a_context_length_error() -> None:
    message = (
        "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it"
    )
    assert is_context_length(stream_error(message))
    assert stream_error("the server had an error").kind == "broken_stream"


async def test_the_window_comes_from_props_once_per_base_url() -> None:
    with LlamaServer(script=lambda body: Step(text="ok"), n_ctx=4096) as server:
        first = ContextWindow("local", {}, server.openai_base_url, None)
        second = ContextWindow("other", {}, server.openai_base_url, "sk-local")
        assert await first.get() == 4096
        assert await second.get() == 4096


async def test_config_wins_over_the_server_and_a_server_saying_nothing_leaves_the_table() -> None:
    with LlamaServer(script=lambda body: Step(text="ok"), n_ctx=4096) as server:
        configured = {"local": ModelInfo(context_window=2000)}
        assert await ContextWindow("local", configured, server.openai_base_url, None).get() == 2000
    # A port nothing listens on: the probe fails quietly.
    silent = ContextWindow("gpt-4.1", {}, "http://127.0.0.1:9/v1", None)
    assert await silent.get() == 1_047_576


async def test_the_running_count_gives_the_fresh_answer_after_appends_and_in_place_clearing() -> (
    None
):
    window = ContextWindow("local", {"local": ModelInfo(context_window=8192)}, None, None)
    messages = [Message("user", "task")] + [Message("user", "x" * 4000) for _ in range(5)]
    assert await window.reply_limit("s", messages, 8192) == reply_limit(8192, "s", messages, 8192)
    messages.append(Message("assistant", "y" * 4000))
    assert await window.reply_limit("s", messages, 8192) == reply_limit(8192, "s", messages, 8192)
    messages[1:4] = [Message("user", "cleared")] * 3  # a compaction, in place, same length
    messages.append(Message("user", "z" * 400))
    assert await window.reply_limit("s", messages, 8192) == reply_limit(8192, "s", messages, 8192)


def test_the_running_count_adds_appends_and_recounts_anything_else() -> None:
    counter, history = MessageChars(), [Message("user", "a" * 10)]
    assert counter.count(history) == 10
    history.append(Message("assistant", "b" * 5))
    assert counter.count(history) == 15  # only the new message was added
    history[-1] = Message("assistant", "c")  # the counted part no longer ends the same
    assert counter.count(history) == 11
    assert counter.count(list(history)) == 11  # another list: counted afresh
    assert counter.count(history) == 11
    history[0] = Message("user", "d")  # an edit in place that the count cannot see...
    assert counter.count(history) == 11
    counter.reset()  # ...until it is told
    assert counter.count(history) == 2


def _unknown_window() -> ContextWindow:
    return ContextWindow("local-unknown", {}, None, None)


async def test_a_length_stop_short_of_the_limit_teaches_an_unknown_window() -> None:
    window = _unknown_window()
    planned = await window.plan("s", [Message("user", "x" * 4000)], 4096)
    assert planned.max_tokens == 4096 and await window.get() is None
    window.succeeded(planned, Usage(input_tokens=5000, output_tokens=3192), "length")
    assert await window.get() == 8192
    # From then on requests are clamped to it.
    later = await window.plan("s", [Message("user", "x" * 24000)], 4096)
    assert later.max_tokens < 4096


async def test_an_estimated_length_stop_well_short_of_the_limit_teaches_the_window() -> None:
    window = _unknown_window()
    planned = await window.plan("s", [Message("user", "x" * 4000)], 4096)
    window.succeeded(planned, Usage(input_tokens=1, output_tokens=2277, estimated=True), "length")
    # The estimated prompt (the plan's) plus the estimated output.
    assert await window.get() == planned.prompt_tokens + 2277


@pytest.mark.parametrize(
    ("usage", "stop"),
    [
        (Usage(input_tokens=5000, output_tokens=4096), "length"),  # the limit stopped it
        # An estimate near the limit: the real count may have reached it.
        (Usage(input_tokens=5000, output_tokens=3900, estimated=True), "length"),
        (Usage(input_tokens=5000, output_tokens=3000), "stop"),  # it just finished
    ],
    ids=["at_the_limit", "estimated_near_the_limit", "not_cut"],
)
async def test_other_replies_teach_nothing(usage: Usage, stop: str) -> None:
    window = _unknown_window()
    planned = await window.plan("s", [Message("user", "hi")], 4096)
    window.succeeded(planned, usage, stop)
    assert await window.get() is None


async def test_a_known_window_is_not_relearned_from_a_length_stop() -> None:
    window = ContextWindow("gpt-4o", {}, None, None)  # the table's 128k
    planned = await window.plan("s", [Message("user", "hi")], 4096)
    window.succeeded(planned, Usage(input_tokens=10, output_tokens=100), "length")
    assert await window.get() == 128_000


async def test_a_reasonless_stream_end_is_an_overflow_once_and_only_past_the_largest_success() -> (
    None
):
    window = _unknown_window()
    small = await window.plan("s", [Message("user", "x" * 400)], 4096)
    # The first request: nothing succeeded yet, so a cut stream is a broken stream (retried).
    assert window.broken_stream(small).kind == "broken_stream"
    window.succeeded(small, Usage(input_tokens=100, output_tokens=5), "stop")
    assert window.broken_stream(small).kind == "broken_stream"  # no larger than a success
    large = await window.plan("s", [Message("user", "x" * 40_000)], 4096)
    guess = window.broken_stream(large)
    assert is_context_length(guess)
    assert await window.get() == large.prompt_tokens  # at most this prompt
    # Straight after (the compacted retry broke too): a broken stream, retried as today.
    assert window.broken_stream(large).kind == "broken_stream"


def test_an_unknown_model_gets_a_moderate_reply_limit_unless_configured() -> None:
    assert max_output_tokens_for("local-unknown", Settings()) == UNKNOWN_MODEL_MAX_OUTPUT
    assert max_output_tokens_for("gpt-4o", Settings()) == 8192
    assert max_output_tokens_for("local-unknown", Settings(max_output_tokens=9000)) == 9000
    entry = ModelInfo(context_window=32_000, max_output_tokens=2000)
    assert max_output_tokens_for("local-unknown", Settings(models={"local-unknown": entry})) == 2000
