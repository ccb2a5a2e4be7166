"""Fixtures of the governor's tests: a real redis-server on a TCP port and on a unix socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis_tcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis-tcp")) as server:
        yield server


@pytest.fixture(scope="module")
def redis_unix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(Path(tmp_path_factory.mktemp("redis-unix")), unix=True) as server:
        yield server
