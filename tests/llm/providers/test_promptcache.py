"""Rolling prompt-cache marks and OpenAI's prompt_cache_key (runner.llm.providers.promptcache),
and both providers sending them through the real SDKs to the fake server."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runner.llm.base import Message
from runner.llm.providers.anthropic import AnthropicMessages
from runner.llm.providers.openai import OpenAIChat
from runner.llm.providers.promptcache import (
    EPHEMERAL,
    prompt_cache_key,
    sends_prompt_cache_key,
    with_breakpoints,
)
from tests.fakes.model_server import FakeModelServer, reply
from tests.fakes.prompt_cache import PromptCache
from tests.llm.conftest import SleepRecorder, make_settings

MARK = dict(EPHEMERAL)


def history(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"user {turn}"})
        messages.append({"role": "assistant", "content": f"assistant {turn}"})
    return [*messages, {"role": "user", "content": "last"}]


def marked(messages: list[dict[str, Any]]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        if isinstance(m["content"], list) and "cache_control" in m["content"][-1]
    ]


def test_system_and_the_three_latest_user_messages_are_marked() -> None:
    system, messages, tools = with_breakpoints("SYS", history(5))
    assert system == [{"type": "text", "text": "SYS", "cache_control": MARK}]
    assert marked(messages) == [6, 8, 10] and tools == []
    assert messages[10]["content"] == [{"type": "text", "text": "last", "cache_control": MARK}]
    assert messages[9] == {"role": "assistant", "content": "assistant 4"}


def test_with_tools_the_last_tool_takes_one_of_the_four_marks() -> None:
    tools = [{"name": "a"}, {"name": "b"}]
    _, messages, marked_tools = with_breakpoints("SYS", history(5), tools)
    assert marked_tools == [{"name": "a"}, {"name": "b", "cache_control": MARK}]
    assert marked(messages) == [8, 10]


def test_the_inputs_are_left_as_they_were() -> None:
    messages = history(2)
    messages[-1] = {"role": "user", "content": [{"type": "text", "text": "x"}]}
    tools = [{"name": "a"}]
    before = copy.deepcopy((messages, tools))
    with_breakpoints("SYS", messages, tools)
    assert (messages, tools) == before


def test_the_last_block_of_a_list_is_marked_and_blocks_that_cannot_be_are_skipped() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "tool_result"}]},
        {"role": "user", "content": [{"type": "thinking", "thinking": "x"}]},
        {"role": "user", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": ""}]},
        {"role": "user", "content": []},
    ]
    _, out, _ = with_breakpoints("SYS", messages)
    assert out[0]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "tool_result", "cache_control": MARK},
    ]
    assert out[1:] == messages[1:]


def test_system_mode_marks_tools_and_system_only_and_off_marks_nothing() -> None:
    system, messages, tools = with_breakpoints("SYS", history(3), [{"name": "a"}], "system")
    assert "cache_control" in system[0] and "cache_control" in tools[0]
    assert marked(messages) == []
    system, messages, tools = with_breakpoints("SYS", history(3), [{"name": "a"}], "off")
    assert system == [{"type": "text", "text": "SYS"}] and tools == [{"name": "a"}]
    assert marked(messages) == []


def test_an_empty_system_prompt_sends_no_block() -> None:
    system, messages, _ = with_breakpoints("", history(4))
    assert system == [] and len(marked(messages)) == 4


def test_the_cache_key_is_stable_per_prompt_and_holds_no_text() -> None:
    key = prompt_cache_key("SYS", "fix the bug")
    assert key == prompt_cache_key("SYS", "fix the bug")
    assert key != prompt_cache_key("SYS", "fix another bug")
    assert key.startswith("agent-runner-") and len(key) == len("agent-runner-") + 32
    assert "fix" not in key


@pytest.mark.parametrize(
    ("setting", "base_url", "sends"),
    [
        (None, None, True),
        (None, "https://api.openai.com/v1", True),
        (None, "http://127.0.0.1:8000/v1", False),
        (None, "https://api.openai.com.evil.example/v1", False),
        (True, "http://127.0.0.1:8000/v1", True),
        (False, None, False),
    ],
)
def test_the_key_goes_to_openai_itself_unless_the_setting_says(
    setting: bool | None, base_url: str | None, sends: bool
) -> None:
    assert sends_prompt_cache_key(setting, base_url) is sends


@pytest.mark.anyio
@pytest.mark.parametrize("setting", [None, True])
async def test_openai_requests_carry_the_key_when_asked(
    server: FakeModelServer, sleeps: SleepRecorder, setting: bool | None
) -> None:
    server.push(reply("ok"), reply("ok"))
    settings = make_settings(server, openai_prompt_cache_key=setting)
    chat = OpenAIChat("gpt-4.1", settings, sleep=sleeps)
    first = [Message("user", "task")]
    await chat.complete("SYS", first)
    await chat.complete("SYS", [*first, Message("assistant", "a"), Message("user", "b")])
    await chat.aclose()
    keys = [request.body.get("prompt_cache_key") for request in server.requests]
    expected = prompt_cache_key("SYS", "task") if setting else None
    assert keys == [expected, expected]


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
async def test_anthropic_requests_carry_rolling_marks(
    server: FakeModelServer, sleeps: SleepRecorder
) -> None:
    server.push(reply("ok"))
    llm = AnthropicMessages("claude-sonnet-4-5", make_settings(server), sleep=sleeps)
    messages = [Message(m["role"], m["content"]) for m in history(4)]
    await llm.complete("SYS", messages)
    await llm.aclose()
    (request,) = server.requests
    assert request.body["system"] == [{"type": "text", "text": "SYS", "cache_control": MARK}]
    assert marked(request.body["messages"]) == [4, 6, 8]
    assert messages[8].wire == {"role": "user", "content": "last"}  # the shared wire is intact


def test_the_fake_cache_reads_what_an_earlier_request_wrote() -> None:
    cache = PromptCache()
    first = {"system": [{"type": "text", "text": "S" * 400, "cache_control": MARK}]}
    first["messages"] = [{"role": "user", "content": [{"type": "text", "text": "u" * 400}]}]
    one = cache.usage(first)
    assert one.cache_read_tokens == 0 and one.cache_write_tokens > 100
    assert one.input_tokens > 100  # the unmarked message
    second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "a"}]}
    two = cache.usage(second)
    assert two.cache_read_tokens == one.cache_write_tokens and two.cache_write_tokens == 0
    assert cache.usage({"messages": [{"role": "user", "content": "x"}]}).input_tokens > 0
