"""The fake model server itself: real SDKs accept its answers, and it starts and stops cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import openai
import pytest

from tests.fakes.model_server import FakeModelServer, fault, reply

REPO = Path(__file__).resolve().parents[2]


def test_non_streaming_openai_reply_parses_with_the_sdk(server: FakeModelServer) -> None:
    server.push(reply("plain", input_tokens=7, output_tokens=3))
    client = openai.OpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)

    completion = client.chat.completions.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
    )

    assert completion.choices[0].message.content == "plain"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 7
    client.close()


def test_non_streaming_anthropic_reply_parses_with_the_sdk(server: FakeModelServer) -> None:
    server.push(reply("plain", input_tokens=7, output_tokens=3, cache_read_tokens=2))
    client = anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)

    message = client.messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )

    assert message.content[0].type == "text"
    assert message.content[0].text == "plain"
    assert (message.usage.output_tokens, message.usage.cache_read_input_tokens) == (3, 2)
    client.close()


def test_errors_carry_the_provider_error_shape(server: FakeModelServer) -> None:
    server.push(fault("overloaded", retry_after_ms="1500"))
    client = anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)

    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(
            model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )

    assert raised.value.status_code == 529
    assert raised.value.response.headers["retry-after-ms"] == "1500"
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_fake",
    }
    client.close()


def test_an_empty_script_answers_400_unless_a_default_is_set() -> None:
    with FakeModelServer(default=reply("again")) as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.openai_base_url, max_retries=0)
        texts = [
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            .choices[0]
            .message.content
            for _ in range(2)
        ]
        client.close()
    assert texts == ["again", "again"]

    with FakeModelServer() as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.openai_base_url, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="no step left"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        client.close()


def test_a_stalled_stream_does_not_block_shutdown() -> None:
    srv = FakeModelServer([reply("never", fault="stall")]).start()
    client = openai.OpenAI(api_key="k", base_url=srv.openai_base_url, max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    next(iter(stream))
    assert srv.wait_for_stall(timeout=5)

    started = time.monotonic()
    srv.stop()

    assert time.monotonic() - started < 2
    client.close()


def test_command_line_server_prints_its_urls_and_serves_until_terminated() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.model_server", "--text", "bench"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        urls = json.loads(process.stdout.readline())
        client = openai.OpenAI(api_key="k", base_url=urls["openai_base_url"], max_retries=0)
        completion = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
        client.close()
        assert completion.choices[0].message.content == "bench"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
