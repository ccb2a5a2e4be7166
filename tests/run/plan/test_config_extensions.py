"""The config file's `extensions:` are checked once, blamed on the config file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.run.plan.loading import check_config_extensions
from runner.settings import load_settings


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path


def test_a_bad_type_is_blamed_on_the_config_line(project: Path) -> None:
    (project / "agent-runner.yaml").write_text(
        "extensions:\n  time:\n    cmd: python\n    timeout: soon\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"agent-runner.yaml:4:5: extensions.time.timeout: "):
        check_config_extensions(load_settings())


def test_partial_entries_and_variables_are_left_to_the_merged_task(project: Path) -> None:
    (project / "agent-runner.yaml").write_text(
        "extensions:\n  time: {timeout: 60}\n  gl: {cmd: npx, timeout: '${T}'}\n", encoding="utf-8"
    )
    check_config_extensions(load_settings())
