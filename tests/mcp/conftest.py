"""Fixtures for the hub tests: extensions for the test servers, a hub factory, event capture."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.mcp.extension import ExtensionConfig
from runner.mcp.hub import HubEvent, McpHub
from runner.settings import environ
from tests.fakes.mcp_test_server import SCRIPT


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sdk_server(*options: str, **fields: Any) -> ExtensionConfig:
    """The SDK test server over stdio."""
    return ExtensionConfig(cmd=sys.executable, args=[str(SCRIPT), *options], **fields)


def workspace_server(root: Path, **fields: Any) -> ExtensionConfig:
    """The workspace server over stdio, started as `python -m runner.workspace`."""
    return ExtensionConfig(
        cmd=sys.executable, args=["-m", "runner.workspace", "--root", str(root)], **fields
    )


@pytest.fixture
def events() -> list[HubEvent]:
    return []


@pytest.fixture
def make_hub(tmp_path: Path, events: list[HubEvent]) -> Callable[..., McpHub]:
    def make(extensions: dict[str, ExtensionConfig], **options: Any) -> McpHub:
        options.setdefault("workdir", tmp_path)
        options.setdefault("artifacts_dir", tmp_path / "artifacts")
        options.setdefault("startup_timeout_s", 20.0)
        options.setdefault("default_tool_timeout_s", 10.0)
        options.setdefault("base_env", environ())
        options.setdefault("on_event", events.append)
        return McpHub(extensions, **options)

    return make
