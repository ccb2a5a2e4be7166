"""Fixtures for the workspace tools: a root folder with an outside neighbour."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.workspace.commands import Commands
from runner.workspace.files import Files
from runner.workspace.paths import Confinement


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n", encoding="utf-8")
    return tmp_path / "root"


@pytest.fixture
def outside(root: Path) -> Path:
    return root.parent / "outside"


@pytest.fixture
def paths(root: Path, tmp_path: Path) -> Confinement:
    return Confinement(root, readable=(tmp_path / "out",))


@pytest.fixture
def files(paths: Confinement) -> Files:
    return Files(paths)


@pytest.fixture
def commands(paths: Confinement, tmp_path: Path) -> Commands:
    return Commands(paths, tmp_path / "out")
