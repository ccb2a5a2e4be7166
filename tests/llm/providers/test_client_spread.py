"""Wide runs spread their calls over several SDK clients, one per 32 tasks at once.

A client's connection pool walks all its connections at each request's start and end, so one
pool serving 128 tasks costs more CPU per request than four serving 32 each. The clients are
told apart by the connections they open: each keeps its own alive.
"""

from __future__ import annotations

import asyncio

import pytest

from runner.llm.providers.anthropic import AnthropicMessages
from runner.llm.providers.openai import OpenAIChat
from runner.llm.providers.sdk_provider import CALLS_PER_CLIENT
from tests.fakes.model_server import FakeModelServer, reply
from tests.llm.conftest import SleepRecorder, make_settings
from tests.llm.providers.test_stream_end import HELLO

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize(("jobs", "clients"), [(1, 1), (CALLS_PER_CLIENT, 1), (65, 3)])
async def test_calls_are_spread_over_one_client_per_32_jobs(
    server: FakeModelServer, wire: str, jobs: int, clients: int
) -> None:
    # A context window from config: no probe of the server's /props (its GETs open connections
    # of their own, which this test would count as clients).
    settings = make_settings(server, jobs=jobs, models={"gpt-4.1": {"context_window": 1_000_000}})
    llm = (
        OpenAIChat("gpt-4.1", settings, sleep=SleepRecorder())
        if wire == "openai"
        else AnthropicMessages("claude-sonnet-4-5", settings, sleep=SleepRecorder())
    )
    server.push(*(reply(f"turn {i}") for i in range(6)))

    for i in range(6):
        assert (await llm.complete("s", HELLO)).text == f"turn {i}"
        await asyncio.wait_for(llm._drains.wait(), 10.0)  # the connection is back in its pool
    await llm.aclose()

    assert server.connections_accepted == clients
