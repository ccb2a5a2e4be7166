"""Provider test fixtures: a fake model server, settings aimed at it, a sleep recorder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runner.settings import RetrySettings, Settings
from tests.fakes.model_server import FakeModelServer

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "AGENT_RUNNER_OPENAI_API_KEY",
    "AGENT_RUNNER_OPENAI_BASE_URL",
    "AGENT_RUNNER_ANTHROPIC_API_KEY",
    "AGENT_RUNNER_ANTHROPIC_BASE_URL",
    "AGENT_RUNNER_MODELS",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own keys must not leak into (or change) these tests."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as running:
        yield running


class SleepRecorder:
    """An injected sleep: records each wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


def make_settings(server: FakeModelServer | None = None, **overrides: Any) -> Settings:
    """Settings aimed at `server` with fast, bounded retries."""
    retry = overrides.pop("retry", None) or RetrySettings(
        max_attempts=4, idle_timeout_s=5.0, request_timeout_s=10.0
    )
    values: dict[str, Any] = {"retry": retry}
    if server is not None:
        values |= {
            "openai_api_key": "sk-test-openai",
            "openai_base_url": server.openai_base_url,
            "anthropic_api_key": "sk-ant-test",
            "anthropic_base_url": server.anthropic_base_url,
        }
    values |= overrides
    return Settings(**values)
